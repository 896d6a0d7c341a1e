package library

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// SemverType is the CEL type of a semantic version.
var SemverType = cel.ObjectType("kubernetes.Semver")

// Semver is a semantic version (semver.org 2.0.0) as a CEL value.
type Semver struct {
	Major, Minor, Patch uint64
	Pre                 []string
	Build               []string
}

const digits = "0123456789"
const alphanum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"

func only(s, set string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune(set, r) }) == -1
}

func leadingZero(s string) bool { return len(s) > 1 && s[0] == '0' }

func parseNumber(s, name string) (uint64, error) {
	if !only(s, digits) {
		return 0, fmt.Errorf("Invalid character(s) found in %s number %q", strings.ToLower(name), s)
	}
	if leadingZero(s) {
		return 0, fmt.Errorf("%s number must not contain leading zeroes %q", name, s)
	}
	return strconv.ParseUint(s, 10, 64)
}

// ParseSemver parses a strict semantic version, with the messages of
// github.com/blang/semver, the parser kube uses.
func ParseSemver(s string) (Semver, error) {
	if s == "" {
		return Semver{}, errors.New("Version string empty")
	}
	parts := strings.SplitN(s, ".", 3)
	if len(parts) != 3 {
		return Semver{}, errors.New("No Major.Minor.Patch elements found")
	}
	var v Semver
	var err error
	if v.Major, err = parseNumber(parts[0], "Major"); err != nil {
		return Semver{}, err
	}
	if v.Minor, err = parseNumber(parts[1], "Minor"); err != nil {
		return Semver{}, err
	}
	patch := parts[2]
	var build, pre []string
	if i := strings.IndexByte(patch, '+'); i >= 0 {
		build = strings.Split(patch[i+1:], ".")
		patch = patch[:i]
	}
	if i := strings.IndexByte(patch, '-'); i >= 0 {
		pre = strings.Split(patch[i+1:], ".")
		patch = patch[:i]
	}
	if v.Patch, err = parseNumber(patch, "Patch"); err != nil {
		return Semver{}, err
	}
	for _, p := range pre {
		switch {
		case p == "":
			return Semver{}, errors.New("Prerelease is empty")
		case only(p, digits):
			if leadingZero(p) {
				return Semver{}, fmt.Errorf("Numeric PreRelease version must not contain leading zeroes %q", p)
			}
		case !only(p, alphanum):
			return Semver{}, fmt.Errorf("Invalid character(s) found in prerelease %q", p)
		}
		v.Pre = append(v.Pre, p)
	}
	for _, b := range build {
		if b == "" {
			return Semver{}, errors.New("Build meta data is empty")
		}
		if !only(b, alphanum) {
			return Semver{}, fmt.Errorf("Invalid character(s) found in build meta data %q", b)
		}
		v.Build = append(v.Build, b)
	}
	return v, nil
}

// normalizeSemver is kube's normalization for semver(s, true): a leading
// "v" dropped, missing minor and patch filled with 0, leading zeroes
// trimmed.
func normalizeSemver(s string) (string, error) {
	s = strings.TrimPrefix(s, "v")
	core, rest := s, ""
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		core, rest = s[:i], s[i:]
	}
	parts := strings.Split(core, ".")
	if len(parts) > 3 {
		return "", fmt.Errorf("could not normalize version: %v", s)
	}
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	for i, p := range parts {
		if len(p) > 1 {
			p = strings.TrimLeft(p, "0")
			if p == "" {
				p = "0"
			}
			parts[i] = p
		}
	}
	return strings.Join(parts, ".") + rest, nil
}

func compareSemver(a, b Semver) int {
	for _, d := range [][2]uint64{{a.Major, b.Major}, {a.Minor, b.Minor}, {a.Patch, b.Patch}} {
		switch {
		case d[0] < d[1]:
			return -1
		case d[0] > d[1]:
			return 1
		}
	}
	switch {
	case len(a.Pre) == 0 && len(b.Pre) == 0:
		return 0
	case len(a.Pre) == 0:
		return 1
	case len(b.Pre) == 0:
		return -1
	}
	for i := 0; i < len(a.Pre) && i < len(b.Pre); i++ {
		if c := comparePre(a.Pre[i], b.Pre[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(a.Pre) < len(b.Pre):
		return -1
	case len(a.Pre) > len(b.Pre):
		return 1
	}
	return 0
}

func comparePre(a, b string) int {
	an, bn := only(a, digits), only(b, digits)
	switch {
	case an && bn:
		x, _ := strconv.ParseUint(a, 10, 64)
		y, _ := strconv.ParseUint(b, 10, 64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}

// String prints v in semver form.
func (v Semver) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	if len(v.Build) > 0 {
		s += "+" + strings.Join(v.Build, ".")
	}
	return s
}

// ConvertToNative implements ref.Val.
func (v Semver) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(v).AssignableTo(t) {
		return v, nil
	}
	return nil, fmt.Errorf("type conversion error from 'Semver' to '%v'", t)
}

// ConvertToType implements ref.Val.
func (v Semver) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case SemverType:
		return v
	case types.TypeType:
		return SemverType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", SemverType, t)
}

// Equal implements ref.Val: equal precedence, build metadata ignored.
func (v Semver) Equal(other ref.Val) ref.Val {
	o, ok := other.(Semver)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(compareSemver(v, o) == 0)
}

// Type implements ref.Val.
func (v Semver) Type() ref.Type { return SemverType }

// Value implements ref.Val.
func (v Semver) Value() any { return v }

// Semvers returns the semver library at kube's version 1: semver(),
// isSemver() (each with an optional normalize flag), major(), minor(),
// patch(), isGreaterThan(), isLessThan() and compareTo().
func Semvers() cel.EnvOption { return cel.Lib(semverLib{}) }

type semverLib struct{}

func (semverLib) LibraryName() string { return "kubernetes.Semver" }

func parseSemverArgs(args ...ref.Val) (Semver, ref.Val) {
	s, ok := args[0].Value().(string)
	if !ok {
		return Semver{}, types.MaybeNoSuchOverloadErr(args[0])
	}
	if len(args) > 1 {
		norm, ok := args[1].Value().(bool)
		if !ok {
			return Semver{}, types.MaybeNoSuchOverloadErr(args[1])
		}
		if norm {
			n, err := normalizeSemver(s)
			if err != nil {
				return Semver{}, types.WrapErr(err)
			}
			s = n
		}
	}
	v, err := ParseSemver(s)
	if err != nil {
		return Semver{}, types.WrapErr(err)
	}
	return v, nil
}

func (semverLib) CompileOptions() []cel.EnvOption {
	st := SemverType
	toSemver := func(args ...ref.Val) ref.Val {
		v, errVal := parseSemverArgs(args...)
		if errVal != nil {
			return errVal
		}
		return v
	}
	isSemver := func(args ...ref.Val) ref.Val {
		_, errVal := parseSemverArgs(args...)
		return types.Bool(errVal == nil)
	}
	part := func(f func(Semver) uint64) cel.OverloadOpt {
		return cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.(Semver)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			return types.Int(f(s))
		})
	}
	cmp := func(f func(int) ref.Val) cel.OverloadOpt {
		return cel.BinaryBinding(func(v, w ref.Val) ref.Val {
			a, ok := v.(Semver)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			b, ok := w.(Semver)
			if !ok {
				return types.MaybeNoSuchOverloadErr(w)
			}
			return f(compareSemver(a, b))
		})
	}
	return []cel.EnvOption{
		cel.Function("semver",
			cel.Overload("string_to_semver", []*cel.Type{cel.StringType}, st, cel.FunctionBinding(toSemver)),
			cel.Overload("string_bool_to_semver", []*cel.Type{cel.StringType, cel.BoolType}, st, cel.FunctionBinding(toSemver))),
		cel.Function("isSemver",
			cel.Overload("is_semver_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.FunctionBinding(isSemver)),
			cel.Overload("is_semver_string_bool", []*cel.Type{cel.StringType, cel.BoolType}, cel.BoolType, cel.FunctionBinding(isSemver))),
		cel.Function("major", cel.MemberOverload("semver_major", []*cel.Type{st}, cel.IntType, part(func(s Semver) uint64 { return s.Major }))),
		cel.Function("minor", cel.MemberOverload("semver_minor", []*cel.Type{st}, cel.IntType, part(func(s Semver) uint64 { return s.Minor }))),
		cel.Function("patch", cel.MemberOverload("semver_patch", []*cel.Type{st}, cel.IntType, part(func(s Semver) uint64 { return s.Patch }))),
		cel.Function("isGreaterThan", cel.MemberOverload("semver_is_greater_than", []*cel.Type{st, st}, cel.BoolType, cmp(func(c int) ref.Val { return types.Bool(c == 1) }))),
		cel.Function("isLessThan", cel.MemberOverload("semver_is_less_than", []*cel.Type{st, st}, cel.BoolType, cmp(func(c int) ref.Val { return types.Bool(c == -1) }))),
		cel.Function("compareTo", cel.MemberOverload("semver_compare_to", []*cel.Type{st, st}, cel.IntType, cmp(func(c int) ref.Val { return types.Int(c) }))),
	}
}

func (semverLib) ProgramOptions() []cel.ProgramOption { return nil }
