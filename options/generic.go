package options

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/server"
)

// GenericOptions are kube-apiserver's generic run options: where the server
// says it is, and how long and how many requests it serves.
type GenericOptions struct {
	// AdvertiseAddress is the address the server tells others to reach it
	// at. Complete defaults it from the bind address.
	AdvertiseAddress net.IP
	// ExternalHost is the host name in URLs the server hands out. Complete
	// defaults it to the advertise address.
	ExternalHost string
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound requests
	// served at once; see server.Config.
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	// RequestTimeout bounds requests that are not long-running.
	RequestTimeout time.Duration
	// MinRequestTimeout, in seconds, is the base of a watch's lifetime.
	MinRequestTimeout int
	// ShutdownDelayDuration keeps serving after shutdown starts, with
	// /readyz failing.
	ShutdownDelayDuration time.Duration
	// EnableProfiling serves /debug/pprof/ to authorized users.
	EnableProfiling bool
	// EventTTL is how long events are kept after their last activity, by
	// a server serving them (the core group).
	EventTTL time.Duration

	// hostIPs and hostname stand in for the machine in tests.
	hostIPs  func() ([]net.IP, error)
	hostname func() (string, error)
}

// NewGenericOptions returns kube-apiserver's defaults.
func NewGenericOptions() *GenericOptions {
	return &GenericOptions{
		MaxRequestsInFlight:         400,
		MaxMutatingRequestsInFlight: 200,
		RequestTimeout:              time.Minute,
		MinRequestTimeout:           1800,
		EnableProfiling:             true,
		EventTTL:                    time.Hour,
	}
}

// AddFlags adds the generic flags.
func (o *GenericOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IPVar(&o.AdvertiseAddress, "advertise-address", o.AdvertiseAddress,
		"The IP address on which to advertise the apiserver to members of the cluster. This address must be reachable by the rest of the cluster. "+
			"If blank, the --bind-address will be used. If --bind-address is unspecified, the address of the host's first non-loopback interface will be used.")
	fs.StringVar(&o.ExternalHost, "external-hostname", o.ExternalHost,
		"The hostname to use when generating externalized URLs for this server. If blank, the advertise address is used, else the machine's host name.")
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight,
		"This and --max-mutating-requests-inflight are summed to determine the server's total concurrency limit (which must be positive) if --enable-priority-and-fairness is true. "+
			"Otherwise, this flag limits the maximum number of non-mutating requests in flight, or a zero value disables the limit completely.")
	fs.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight,
		"This and --max-requests-inflight are summed to determine the server's total concurrency limit (which must be positive) if --enable-priority-and-fairness is true. "+
			"Otherwise, this flag limits the maximum number of mutating requests in flight, or a zero value disables the limit completely.")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout,
		"An optional field indicating the duration a handler must keep a request open before timing it out. "+
			"This is the default request timeout for requests but may be overridden by flags such as --min-request-timeout for specific types of requests.")
	fs.IntVar(&o.MinRequestTimeout, "min-request-timeout", o.MinRequestTimeout,
		"An optional field indicating the minimum number of seconds a handler must keep a request open before timing it out. "+
			"Currently only honored by the watch request handler, which picks a randomized value above this number as the connection timeout, to spread out load.")
	fs.DurationVar(&o.ShutdownDelayDuration, "shutdown-delay-duration", o.ShutdownDelayDuration,
		"Time to delay the termination. During that time the server keeps serving requests normally. The endpoints /healthz and /livez will return success, "+
			"but /readyz immediately returns failure. Graceful termination starts after this delay has elapsed. "+
			"This can be used to allow load balancer to stop sending traffic to this server.")
	fs.DurationVar(&o.EventTTL, "event-ttl", o.EventTTL,
		"Amount of time to retain events.")
	fs.BoolVar(&o.EnableProfiling, "profiling", o.EnableProfiling,
		"Enable profiling via web interface host:port/debug/pprof/ (for users the authorizer allows there: under RBAC, cluster-admin).")
}

// Validate checks the limits, with kube-apiserver's messages.
func (o *GenericOptions) Validate() []error {
	var errs []error
	if o.MaxRequestsInFlight < 0 {
		errs = append(errs, errors.New("--max-requests-inflight can not be negative value"))
	}
	if o.MaxMutatingRequestsInFlight < 0 {
		errs = append(errs, errors.New("--max-mutating-requests-inflight can not be negative value"))
	}
	if o.RequestTimeout < 0 {
		errs = append(errs, errors.New("--request-timeout can not be negative value"))
	}
	if o.MinRequestTimeout < 0 {
		errs = append(errs, errors.New("--min-request-timeout can not be negative value"))
	}
	if o.ShutdownDelayDuration < 0 {
		errs = append(errs, errors.New("--shutdown-delay-duration can not be negative value"))
	}
	if o.EventTTL <= 0 {
		errs = append(errs, errors.New("--event-ttl must be greater than 0"))
	}
	return errs
}

// DefaultAdvertiseAddress sets AdvertiseAddress when it is unset: a
// specific bind address is advertised as is; an unspecified one (0.0.0.0,
// ::) gives the first non-loopback interface's address, IPv4 first, or
// 127.0.0.1 on a machine without one. Unlike kube-apiserver, a loopback
// bind address is advertised as is: a server that listens only there
// cannot be reached at any other address.
func (o *GenericOptions) DefaultAdvertiseAddress(bind net.IP, log *slog.Logger) error {
	if o.AdvertiseAddress != nil && !o.AdvertiseAddress.IsUnspecified() {
		return nil
	}
	if bind != nil && !bind.IsUnspecified() {
		o.AdvertiseAddress = bind
		return nil
	}
	hostIPs := o.hostIPs
	if hostIPs == nil {
		hostIPs = nonLoopbackIPs
	}
	ips, err := hostIPs()
	if err != nil {
		return fmt.Errorf("unable to find suitable network address: %w; set --advertise-address or a specific --bind-address", err)
	}
	for _, want4 := range []bool{true, false} {
		for _, ip := range ips {
			if (ip.To4() != nil) == want4 && ip.IsGlobalUnicast() {
				o.AdvertiseAddress = ip
				return nil
			}
		}
	}
	log.Info("no non-loopback network interface, advertising the loopback address", "advertiseAddress", "127.0.0.1")
	o.AdvertiseAddress = net.IPv4(127, 0, 0, 1)
	return nil
}

// DefaultExternalHost sets ExternalHost when it is unset: to the advertise
// address, else to the machine's host name, and logs the choice.
func (o *GenericOptions) DefaultExternalHost(log *slog.Logger) error {
	if o.ExternalHost != "" {
		return nil
	}
	if o.AdvertiseAddress != nil {
		o.ExternalHost = o.AdvertiseAddress.String()
	} else {
		hostname := o.hostname
		if hostname == nil {
			hostname = os.Hostname
		}
		h, err := hostname()
		if err != nil {
			return fmt.Errorf("error finding host name: %w", err)
		}
		o.ExternalHost = h
	}
	log.Info(fmt.Sprintf("external host was not specified, using %v", o.ExternalHost))
	return nil
}

// ApplyTo sets the timeouts and limits, and the external address's host
// (SecureServingOptions.ApplyTo adds the port).
func (o *GenericOptions) ApplyTo(c *server.Config) error {
	c.ExternalAddress = o.ExternalHost
	c.MaxRequestsInFlight = o.MaxRequestsInFlight
	c.MaxMutatingRequestsInFlight = o.MaxMutatingRequestsInFlight
	c.RequestTimeout = o.RequestTimeout
	c.MinRequestTimeout = time.Duration(o.MinRequestTimeout) * time.Second
	c.ShutdownDelayDuration = o.ShutdownDelayDuration
	c.EnableProfiling = o.EnableProfiling
	c.EventTTL = o.EventTTL
	return nil
}

// nonLoopbackIPs lists the addresses of the interfaces that are up and not
// loopback, in interface order.
func nonLoopbackIPs() ([]net.IP, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				ips = append(ips, n.IP)
			}
		}
	}
	return ips, nil
}
