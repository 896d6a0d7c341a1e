package library

import (
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// QuantityType is the CEL type of a Kubernetes resource quantity.
var QuantityType = cel.ObjectType("kubernetes.Quantity")

// Errors ParseQuantity returns, worded as k8s.io/apimachinery's resource
// package words them; CEL shows them to rule authors.
var (
	ErrQuantityFormat = errors.New("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
	ErrQuantitySuffix = errors.New("unable to parse quantity's suffix")
)

// Quantity is a resource quantity ("500m", "1.5Gi", "1e3") as an exact
// rational number. It holds what CEL rules can observe of
// resource.Quantity: its value, rounded up to nano units as kube's parser
// does; the format a quantity is printed in is not observable from CEL.
type Quantity struct{ r *big.Rat }

var nano = big.NewRat(1, 1_000_000_000)

// maxExponent bounds the decimal exponents computed exactly; kube's
// decimal type holds any, but 10^400 is already beyond float64.
const maxExponent = 400

// ParseQuantity parses s as resource.ParseQuantity does.
func ParseQuantity(s string) (Quantity, error) {
	if s == "" {
		return Quantity{}, ErrQuantityFormat
	}
	positive, num, denom, suffix, err := splitQuantity(s)
	if err != nil {
		return Quantity{}, err
	}
	base, exp, ok := interpretSuffix(suffix)
	if !ok {
		return Quantity{}, ErrQuantitySuffix
	}
	r, ok := new(big.Rat).SetString(num + "." + denom + "0")
	if !ok {
		return Quantity{}, ErrQuantityFormat
	}
	if r.Sign() == 0 {
		return Quantity{new(big.Rat)}, nil
	}
	if base == 10 {
		// A decimal exponent may be up to 2^31: decide the far ends from
		// the digits alone rather than computing 10^exp.
		intDigits := len(strings.TrimLeft(num, "0"))
		fracZeros := 0
		if intDigits == 0 {
			fracZeros = len(denom) - len(strings.TrimLeft(denom, "0"))
		}
		switch {
		case exp-fracZeros > maxExponent:
			// Beyond any value a resource is measured in: kept as
			// 10^maxExponent, so such quantities compare equal.
			r = new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(maxExponent), nil))
			exp = 0
		case intDigits+exp < -9: // below 1n: rounds up to it
			r = new(big.Rat).Set(nano)
			exp = 0
		}
	}
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(int64(base)), big.NewInt(int64(abs(exp))), nil))
	if exp < 0 {
		r.Quo(r, scale)
	} else {
		r.Mul(r, scale)
	}
	r = roundUpToNano(r)
	if !positive {
		r.Neg(r)
	}
	return Quantity{r}, nil
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// roundUpToNano rounds a non-negative r up to a multiple of 1e-9, as
// resource.Quantity keeps at most nano precision, rounding away from zero.
func roundUpToNano(r *big.Rat) *big.Rat {
	scaled := new(big.Rat).Quo(r, nano)
	if scaled.IsInt() {
		return r
	}
	q := new(big.Int).Quo(scaled.Num(), scaled.Denom())
	q.Add(q, big.NewInt(1))
	return new(big.Rat).Mul(new(big.Rat).SetInt(q), nano)
}

// splitQuantity follows resource's parseQuantityString: an optional sign,
// digits with an optional fraction, then a suffix of unit letters and an
// optionally signed exponent.
func splitQuantity(s string) (positive bool, num, denom, suffix string, err error) {
	positive = true
	pos, end := 0, len(s)
	switch s[0] {
	case '-':
		positive = false
		pos++
	case '+':
		pos++
	}
	for pos < end && s[pos] == '0' {
		pos++
	}
	if pos >= end {
		return positive, "0", "", "", nil
	}
	start := pos
	for pos < end && s[pos] >= '0' && s[pos] <= '9' {
		pos++
	}
	num = s[start:pos]
	if num == "" {
		num = "0"
	}
	if pos < end && s[pos] == '.' {
		pos++
		start = pos
		for pos < end && s[pos] >= '0' && s[pos] <= '9' {
			pos++
		}
		denom = s[start:pos]
	}
	start = pos
	for pos < end && strings.IndexByte("eEinumkKMGTP", s[pos]) >= 0 {
		pos++
	}
	if pos < end && (s[pos] == '-' || s[pos] == '+') {
		pos++
	}
	for pos < end && s[pos] >= '0' && s[pos] <= '9' {
		pos++
	}
	if pos < end {
		return false, "", "", "", ErrQuantityFormat
	}
	return positive, num, denom, s[start:], nil
}

var binarySuffixes = map[string]int{"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
var decimalSuffixes = map[string]int{"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

func interpretSuffix(s string) (base, exp int, ok bool) {
	if e, ok := decimalSuffixes[s]; ok {
		return 10, e, true
	}
	if e, ok := binarySuffixes[s]; ok {
		return 2, e, true
	}
	if len(s) > 1 && (s[0] == 'e' || s[0] == 'E') {
		e, err := strconv.ParseInt(s[1:], 10, 32)
		if err != nil {
			return 0, 0, false
		}
		return 10, int(e), true
	}
	return 0, 0, false
}

// Cmp compares q with o: -1, 0 or 1.
func (q Quantity) Cmp(o Quantity) int { return q.rat().Cmp(o.rat()) }

func (q Quantity) rat() *big.Rat {
	if q.r == nil {
		return new(big.Rat)
	}
	return q.r
}

// AsInt64 returns q as an integer when it is one that fits.
func (q Quantity) AsInt64() (int64, bool) {
	r := q.rat()
	if !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

// String prints q as a plain decimal number; kube's canonical suffixed
// form is not observable from CEL.
func (q Quantity) String() string { return q.rat().FloatString(9) }

// ConvertToNative implements ref.Val.
func (q Quantity) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(q).AssignableTo(t) {
		return q, nil
	}
	return nil, fmt.Errorf("type conversion error from 'Quantity' to '%v'", t)
}

// ConvertToType implements ref.Val.
func (q Quantity) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case QuantityType:
		return q
	case types.TypeType:
		return QuantityType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", QuantityType, t)
}

// Equal implements ref.Val: equal values, whatever their written form.
func (q Quantity) Equal(other ref.Val) ref.Val {
	o, ok := other.(Quantity)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(q.Cmp(o) == 0)
}

// Type implements ref.Val.
func (q Quantity) Type() ref.Type { return QuantityType }

// Value implements ref.Val.
func (q Quantity) Value() any { return q }

// Quantities returns the quantity library: quantity(), isQuantity(),
// sign(), isInteger(), asInteger(), asApproximateFloat(), add(), sub(),
// isGreaterThan(), isLessThan() and compareTo().
func Quantities() cel.EnvOption { return cel.Lib(quantityLib{}) }

type quantityLib struct{}

func (quantityLib) LibraryName() string { return "k8s.quantity" }

func onQuantity(f func(Quantity) ref.Val) cel.OverloadOpt {
	return cel.UnaryBinding(func(v ref.Val) ref.Val {
		q, ok := v.(Quantity)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		return f(q)
	})
}

func onQuantities(f func(a, b Quantity) ref.Val) cel.OverloadOpt {
	return cel.BinaryBinding(func(v, w ref.Val) ref.Val {
		a, ok := v.(Quantity)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		switch b := w.(type) {
		case Quantity:
			return f(a, b)
		case types.Int:
			return f(a, Quantity{new(big.Rat).SetInt64(int64(b))})
		}
		return types.MaybeNoSuchOverloadErr(w)
	})
}

func (quantityLib) CompileOptions() []cel.EnvOption {
	qt := QuantityType
	return []cel.EnvOption{
		cel.Function("quantity", cel.Overload("string_to_quantity", []*cel.Type{cel.StringType}, qt, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.Value().(string)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			q, err := ParseQuantity(s)
			if err != nil {
				return types.WrapErr(err)
			}
			return q
		}))),
		cel.Function("isQuantity", cel.Overload("is_quantity_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.Value().(string)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			_, err := ParseQuantity(s)
			return types.Bool(err == nil)
		}))),
		// sign is a global function in kube: sign(q), not q.sign().
		cel.Function("sign", cel.Overload("quantity_sign", []*cel.Type{qt}, cel.IntType, onQuantity(func(q Quantity) ref.Val {
			return types.Int(q.rat().Sign())
		}))),
		cel.Function("isInteger", cel.MemberOverload("quantity_is_integer", []*cel.Type{qt}, cel.BoolType, onQuantity(func(q Quantity) ref.Val {
			_, ok := q.AsInt64()
			return types.Bool(ok)
		}))),
		cel.Function("asInteger", cel.MemberOverload("quantity_get_int", []*cel.Type{qt}, cel.IntType, onQuantity(func(q Quantity) ref.Val {
			i, ok := q.AsInt64()
			if !ok {
				return types.NewErr("cannot convert value to integer")
			}
			return types.Int(i)
		}))),
		cel.Function("asApproximateFloat", cel.MemberOverload("quantity_get_float", []*cel.Type{qt}, cel.DoubleType, onQuantity(func(q Quantity) ref.Val {
			f, _ := q.rat().Float64()
			return types.Double(f)
		}))),
		cel.Function("add",
			cel.MemberOverload("quantity_add", []*cel.Type{qt, qt}, qt, onQuantities(func(a, b Quantity) ref.Val {
				return Quantity{new(big.Rat).Add(a.rat(), b.rat())}
			})),
			cel.MemberOverload("quantity_add_int", []*cel.Type{qt, cel.IntType}, qt, onQuantities(func(a, b Quantity) ref.Val {
				return Quantity{new(big.Rat).Add(a.rat(), b.rat())}
			}))),
		cel.Function("sub",
			cel.MemberOverload("quantity_sub", []*cel.Type{qt, qt}, qt, onQuantities(func(a, b Quantity) ref.Val {
				return Quantity{new(big.Rat).Sub(a.rat(), b.rat())}
			})),
			cel.MemberOverload("quantity_sub_int", []*cel.Type{qt, cel.IntType}, qt, onQuantities(func(a, b Quantity) ref.Val {
				return Quantity{new(big.Rat).Sub(a.rat(), b.rat())}
			}))),
		cel.Function("isGreaterThan", cel.MemberOverload("quantity_is_greater_than", []*cel.Type{qt, qt}, cel.BoolType, onQuantities(func(a, b Quantity) ref.Val {
			return types.Bool(a.Cmp(b) == 1)
		}))),
		cel.Function("isLessThan", cel.MemberOverload("quantity_is_less_than", []*cel.Type{qt, qt}, cel.BoolType, onQuantities(func(a, b Quantity) ref.Val {
			return types.Bool(a.Cmp(b) == -1)
		}))),
		cel.Function("compareTo", cel.MemberOverload("quantity_compare_to", []*cel.Type{qt, qt}, cel.IntType, onQuantities(func(a, b Quantity) ref.Val {
			return types.Int(a.Cmp(b))
		}))),
	}
}

func (quantityLib) ProgramOptions() []cel.ProgramOption { return nil }
