package library

import (
	"fmt"
	"net/netip"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// IPType and CIDRType are the CEL types of an IP address and a CIDR.
var (
	IPType   = cel.OpaqueType("net.IP")
	CIDRType = cel.OpaqueType("net.CIDR")
)

// IP is an IP address as a CEL value.
type IP struct{ netip.Addr }

// CIDR is an IP network as a CEL value.
type CIDR struct{ netip.Prefix }

// ConvertToNative implements ref.Val.
func (i IP) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(i.Addr).AssignableTo(t) {
		return i.Addr, nil
	}
	if reflect.TypeOf("").AssignableTo(t) {
		return i.Addr.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from 'IP' to '%v'", t)
}

// ConvertToType implements ref.Val.
func (i IP) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case IPType:
		return i
	case types.TypeType:
		return IPType
	case types.StringType:
		return types.String(i.Addr.String())
	}
	return types.NewErr("type conversion error from '%s' to '%s'", IPType, t)
}

// Equal implements ref.Val.
func (i IP) Equal(other ref.Val) ref.Val {
	o, ok := other.(IP)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(i.Addr == o.Addr)
}

// Type implements ref.Val.
func (i IP) Type() ref.Type { return IPType }

// Value implements ref.Val.
func (i IP) Value() any { return i.Addr }

// Size is the address's length in bytes, the size kube's cost model uses.
func (i IP) Size() ref.Val { return types.Int(i.Addr.BitLen() / 8) }

// ConvertToNative implements ref.Val.
func (c CIDR) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(c.Prefix).AssignableTo(t) {
		return c.Prefix, nil
	}
	if reflect.TypeOf("").AssignableTo(t) {
		return c.Prefix.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from 'CIDR' to '%v'", t)
}

// ConvertToType implements ref.Val.
func (c CIDR) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case CIDRType:
		return c
	case types.TypeType:
		return CIDRType
	case types.StringType:
		return types.String(c.Prefix.String())
	}
	return types.NewErr("type conversion error from '%s' to '%s'", CIDRType, t)
}

// Equal implements ref.Val.
func (c CIDR) Equal(other ref.Val) ref.Val {
	o, ok := other.(CIDR)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(c.Prefix == o.Prefix)
}

// Type implements ref.Val.
func (c CIDR) Type() ref.Type { return CIDRType }

// Value implements ref.Val.
func (c CIDR) Value() any { return c.Prefix }

// Size is the address's length in bytes, the size kube's cost model uses.
func (c CIDR) Size() ref.Val { return types.Int(c.Prefix.Addr().BitLen() / 8) }

// parseIP parses as kube does, with its messages: no zones, no
// IPv4-mapped IPv6.
func parseIP(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("IP Address %q parse error during conversion from string: %v", s, err)
	}
	if a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("IP address %q with zone value is not allowed", s)
	}
	if a.Is4In6() {
		return netip.Addr{}, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", s)
	}
	return a, nil
}

// parseCIDR parses as kube does; netip's errors come out with kube's
// prefix twice, as kube's do (it wraps them once more in cidr()).
func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("network address parse error during conversion from string: %v", err)
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", s)
	}
	return p, nil
}

// IPs returns the IP address library: ip(), isIP(), ip.isCanonical(),
// string(), family() and the isUnspecified, isLoopback,
// isLinkLocalMulticast, isLinkLocalUnicast and isGlobalUnicast tests.
func IPs() cel.EnvOption { return cel.Lib(ipLib{}) }

type ipLib struct{}

func (ipLib) LibraryName() string { return "net.ip" }

func ipTest(name, id string, f func(netip.Addr) bool) cel.EnvOption {
	return cel.Function(name, cel.MemberOverload(id, []*cel.Type{IPType}, cel.BoolType,
		cel.UnaryBinding(func(v ref.Val) ref.Val {
			i, ok := v.(IP)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			return types.Bool(f(i.Addr))
		})))
}

func (ipLib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Types(IPType),
		cel.Function("ip", cel.Overload("string_to_ip", []*cel.Type{cel.StringType}, IPType, cel.UnaryBinding(stringToIP))),
		cel.Function("isIP", cel.Overload("is_ip", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.Value().(string)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			_, err := parseIP(s)
			return types.Bool(err == nil)
		}))),
		cel.Function("ip.isCanonical", cel.Overload("ip_is_canonical", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.Value().(string)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			a, err := parseIP(s)
			if err != nil {
				return types.NewErr("%v", err)
			}
			return types.Bool(a.String() == s)
		}))),
		cel.Function("string", cel.Overload("ip_to_string", []*cel.Type{IPType}, cel.StringType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			return v.ConvertToType(types.StringType)
		}))),
		cel.Function("family", cel.MemberOverload("ip_family", []*cel.Type{IPType}, cel.IntType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			i, ok := v.(IP)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			if i.Addr.Is4() {
				return types.Int(4)
			}
			return types.Int(6)
		}))),
		ipTest("isUnspecified", "ip_is_unspecified", netip.Addr.IsUnspecified),
		ipTest("isLoopback", "ip_is_loopback", netip.Addr.IsLoopback),
		ipTest("isLinkLocalMulticast", "ip_is_link_local_multicast", netip.Addr.IsLinkLocalMulticast),
		ipTest("isLinkLocalUnicast", "ip_is_link_local_unicast", netip.Addr.IsLinkLocalUnicast),
		ipTest("isGlobalUnicast", "ip_is_global_unicast", netip.Addr.IsGlobalUnicast),
	}
}

func (ipLib) ProgramOptions() []cel.ProgramOption { return nil }

func stringToIP(v ref.Val) ref.Val {
	s, ok := v.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	a, err := parseIP(s)
	if err != nil {
		return types.NewErr("%v", err)
	}
	return IP{a}
}

// CIDRs returns the CIDR library: cidr(), isCIDR(), string(),
// containsIP(), containsCIDR(), ip(), masked() and prefixLength().
func CIDRs() cel.EnvOption { return cel.Lib(cidrLib{}) }

type cidrLib struct{}

func (cidrLib) LibraryName() string { return "net.cidr" }

func (cidrLib) CompileOptions() []cel.EnvOption {
	unary := func(f func(CIDR) ref.Val) cel.OverloadOpt {
		return cel.UnaryBinding(func(v ref.Val) ref.Val {
			c, ok := v.(CIDR)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			return f(c)
		})
	}
	binary := func(f func(CIDR, ref.Val) ref.Val) cel.OverloadOpt {
		return cel.BinaryBinding(func(v, arg ref.Val) ref.Val {
			c, ok := v.(CIDR)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			return f(c, arg)
		})
	}
	return []cel.EnvOption{
		cel.Types(CIDRType),
		cel.Function("cidr", cel.Overload("string_to_cidr", []*cel.Type{cel.StringType}, CIDRType, cel.UnaryBinding(stringToCIDR))),
		cel.Function("isCIDR", cel.Overload("is_cidr", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.Value().(string)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			_, err := parseCIDR(s)
			return types.Bool(err == nil)
		}))),
		cel.Function("string", cel.Overload("cidr_to_string", []*cel.Type{CIDRType}, cel.StringType, unary(func(c CIDR) ref.Val {
			return types.String(c.Prefix.String())
		}))),
		cel.Function("containsIP",
			cel.MemberOverload("cidr_contains_ip_string", []*cel.Type{CIDRType, cel.StringType}, cel.BoolType, binary(func(c CIDR, arg ref.Val) ref.Val {
				ip := stringToIP(arg)
				if types.IsError(ip) {
					return ip
				}
				return types.Bool(c.Prefix.Contains(ip.(IP).Addr))
			})),
			cel.MemberOverload("cidr_contains_ip_ip", []*cel.Type{CIDRType, IPType}, cel.BoolType, binary(func(c CIDR, arg ref.Val) ref.Val {
				ip, ok := arg.(IP)
				if !ok {
					return types.MaybeNoSuchOverloadErr(arg)
				}
				return types.Bool(c.Prefix.Contains(ip.Addr))
			}))),
		cel.Function("containsCIDR",
			cel.MemberOverload("cidr_contains_cidr_string", []*cel.Type{CIDRType, cel.StringType}, cel.BoolType, binary(func(c CIDR, arg ref.Val) ref.Val {
				other := stringToCIDR(arg)
				if types.IsError(other) {
					return other
				}
				return containsCIDR(c, other.(CIDR))
			})),
			cel.MemberOverload("cidr_contains_cidr", []*cel.Type{CIDRType, CIDRType}, cel.BoolType, binary(func(c CIDR, arg ref.Val) ref.Val {
				other, ok := arg.(CIDR)
				if !ok {
					return types.MaybeNoSuchOverloadErr(arg)
				}
				return containsCIDR(c, other)
			}))),
		cel.Function("ip", cel.MemberOverload("cidr_ip", []*cel.Type{CIDRType}, IPType, unary(func(c CIDR) ref.Val {
			return IP{c.Prefix.Addr()}
		}))),
		cel.Function("masked", cel.MemberOverload("cidr_masked", []*cel.Type{CIDRType}, CIDRType, unary(func(c CIDR) ref.Val {
			return CIDR{c.Prefix.Masked()}
		}))),
		cel.Function("prefixLength", cel.MemberOverload("cidr_prefix_length", []*cel.Type{CIDRType}, cel.IntType, unary(func(c CIDR) ref.Val {
			return types.Int(c.Prefix.Bits())
		}))),
	}
}

func (cidrLib) ProgramOptions() []cel.ProgramOption { return nil }

func containsCIDR(c, other CIDR) ref.Val {
	return types.Bool(c.Prefix.Overlaps(other.Prefix) && c.Prefix.Bits() <= other.Prefix.Bits())
}

func stringToCIDR(v ref.Val) ref.Val {
	s, ok := v.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	p, err := parseCIDR(s)
	if err != nil {
		return types.NewErr("network address parse error during conversion from string: %v", err)
	}
	return CIDR{p}
}
