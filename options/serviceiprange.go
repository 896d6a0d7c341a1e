package options

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"net"
	"strings"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/server"
)

// DefaultServiceIPCIDR is the service range when none is given, as in
// kube-apiserver.
var DefaultServiceIPCIDR = net.IPNet{IP: net.IPv4(10, 0, 0, 0).To4(), Mask: net.CIDRMask(24, 32)}

// maxCIDRBits bounds the size of a service range: at most 2^20 addresses.
const maxCIDRBits = 20

// ServiceIPRangeOptions hold --service-cluster-ip-range. An apikit server
// allocates no service IPs; it puts the API server's service IP in its
// generated serving certificate, so that clients reaching it through a
// Service of that range can verify it.
type ServiceIPRangeOptions struct {
	// ServiceClusterIPRanges is "primary[,secondary]" in CIDR notation;
	// empty means DefaultServiceIPCIDR.
	ServiceClusterIPRanges string

	// Set by Complete.

	// Primary and Secondary are the parsed ranges; Secondary is zero when
	// not given.
	Primary, Secondary net.IPNet
	// APIServerServiceIP is the first usable address of the primary range.
	APIServerServiceIP net.IP
}

// NewServiceIPRangeOptions returns the default: the default range.
func NewServiceIPRangeOptions() *ServiceIPRangeOptions { return &ServiceIPRangeOptions{} }

// AddFlags adds --service-cluster-ip-range.
func (o *ServiceIPRangeOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ServiceClusterIPRanges, "service-cluster-ip-range", o.ServiceClusterIPRanges,
		"A CIDR notation IP range from which to assign service cluster IPs. Max of two dual-stack CIDRs is allowed. "+
			"The API server's service IP, the range's first address, is put in a generated serving certificate. If blank, "+DefaultServiceIPCIDR.String()+".")
}

// Validate parses the ranges and checks their sizes and families, with
// kube-apiserver's messages.
func (o *ServiceIPRangeOptions) Validate() []error {
	_, _, _, errs := parseServiceIPRanges(o.ServiceClusterIPRanges)
	return errs
}

// Complete sets Primary, Secondary and APIServerServiceIP.
func (o *ServiceIPRangeOptions) Complete(log *slog.Logger) error {
	ip, primary, secondary, errs := parseServiceIPRanges(o.ServiceClusterIPRanges)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if o.ServiceClusterIPRanges == "" {
		log.Debug("no --service-cluster-ip-range given, using the default", "range", DefaultServiceIPCIDR.String())
	}
	o.APIServerServiceIP, o.Primary, o.Secondary = ip, primary, secondary
	log.Debug("setting service IP", "serviceIP", ip.String())
	return nil
}

// ApplyTo adds the service IP to the addresses a generated certificate
// covers.
func (o *ServiceIPRangeOptions) ApplyTo(c *server.Config) error {
	if o.APIServerServiceIP != nil {
		c.SecureServing.AlternateIPs = append(c.SecureServing.AlternateIPs, o.APIServerServiceIP)
	}
	return nil
}

// parseServiceIPRanges is kube-apiserver's getServiceIPAndRanges followed
// by its validateClusterIPFlags.
func parseServiceIPRanges(ranges string) (net.IP, net.IPNet, net.IPNet, []error) {
	var list []string
	if ranges != "" {
		list = strings.Split(ranges, ",")
	}
	if len(list) == 0 {
		ip, err := serviceIP(DefaultServiceIPCIDR)
		if err != nil {
			return nil, net.IPNet{}, net.IPNet{}, []error{fmt.Errorf("error determining service IP ranges: %w", err)}
		}
		return ip, DefaultServiceIPCIDR, net.IPNet{}, nil
	}
	var errs []error
	if len(list) > 2 {
		errs = append(errs, errors.New("--service-cluster-ip-range must not contain more than two entries"))
	}
	_, primary, err := net.ParseCIDR(strings.TrimSpace(list[0]))
	if err != nil {
		return nil, net.IPNet{}, net.IPNet{}, append(errs, errors.New("service-cluster-ip-range[0] is not a valid cidr"))
	}
	ip, err := serviceIP(*primary)
	if err != nil {
		errs = append(errs, fmt.Errorf("error determining service IP ranges for primary service cidr: %w", err))
	}
	if err := validateMaxCIDRRange(*primary, "--service-cluster-ip-range"); err != nil {
		errs = append(errs, err)
	}
	var secondary net.IPNet
	if len(list) > 1 {
		_, s, err := net.ParseCIDR(strings.TrimSpace(list[1]))
		if err != nil {
			return nil, net.IPNet{}, net.IPNet{}, append(errs, errors.New("service-cluster-ip-range[1] is not an ip net"))
		}
		secondary = *s
		if (primary.IP.To4() != nil) == (secondary.IP.To4() != nil) {
			errs = append(errs, errors.New("--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family"))
		}
		if err := validateMaxCIDRRange(secondary, "--service-cluster-ip-range[1]"); err != nil {
			errs = append(errs, err)
		}
	}
	return ip, *primary, secondary, errs
}

// serviceIP is the first usable address of a range of at least 8.
func serviceIP(r net.IPNet) (net.IP, error) {
	if size := min(rangeSize(r), 1<<16); size < 8 {
		return nil, fmt.Errorf("the service cluster IP range must be at least %d IP addresses", 8)
	}
	base := r.IP.Mask(r.Mask)
	n := new(big.Int).Add(new(big.Int).SetBytes(base), big.NewInt(1))
	ip := n.FillBytes(make([]byte, len(base)))
	return net.IP(ip), nil
}

// rangeSize is the number of addresses in r as k8s.io/utils/net counts
// them, where ranges of 2^31 IPv4 or 2^127 IPv6 addresses and more count as
// 0 (too large to use).
func rangeSize(r net.IPNet) int64 {
	ones, bits := r.Mask.Size()
	if bits == 32 && bits-ones >= 31 || bits == 128 && bits-ones >= 127 {
		return 0
	}
	if bits-ones >= 63 {
		return math.MaxInt64
	}
	return int64(1) << uint(bits-ones)
}

func validateMaxCIDRRange(r net.IPNet, flag string) error {
	ones, bits := r.Mask.Size()
	if bits-ones > maxCIDRBits {
		return fmt.Errorf("specified %s is too large; for %d-bit addresses, the mask must be >= %d", flag, bits, bits-maxCIDRBits)
	}
	return nil
}
