package library

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/apikit-dev/apikit/meta"
)

// FormatType is the CEL type of a named format.
var FormatType = cel.ObjectType("kubernetes.NamedFormat")

// MaxNameFormatRegexSize is kube's estimate of a format's regex length in
// the static cost of <Format>.validate().
const MaxNameFormatRegexSize = 128

// Format is a named string format as a CEL value: validate() returns the
// messages of its validation, kube's words.
type Format struct {
	Name     string
	validate func(string) []string
	// maxRegexSize is the length of the pattern kube charges for at run
	// time.
	maxRegexSize int
}

// ConvertToNative implements ref.Val.
func (f *Format) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from 'Format' to '%v'", t)
}

// ConvertToType implements ref.Val.
func (f *Format) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case FormatType:
		return f
	case types.TypeType:
		return FormatType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", FormatType, t)
}

// Equal implements ref.Val.
func (f *Format) Equal(other ref.Val) ref.Val {
	o, ok := other.(*Format)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(f.Name == o.Name)
}

// Type implements ref.Val.
func (f *Format) Type() ref.Type { return FormatType }

// Value implements ref.Val.
func (f *Format) Value() any { return f }

const dns1035LabelFmt = "[a-z]([-a-z0-9]*[a-z0-9])?"

var dns1035LabelRE = regexp.MustCompile("^" + dns1035LabelFmt + "$")

// validateDNS1035Label is apimachinery's IsDNS1035Label, with its words.
func validateDNS1035Label(s string) []string {
	var errs []string
	if len(s) > 63 {
		errs = append(errs, "must be no more than 63 characters")
	}
	if !dns1035LabelRE.MatchString(s) {
		errs = append(errs, "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "+
			"start with an alphabetic character, and end with an alphanumeric character "+
			"(e.g. 'my-name',  or 'abc-123', regex used for validation is '"+dns1035LabelFmt+"')")
	}
	return errs
}

// maskTrailingDash is apimachinery's: a generateName prefix may end in a
// dash, so the last two characters are replaced before validation.
func maskTrailingDash(s string) string {
	if len(s) > 1 && strings.HasSuffix(s, "-") {
		return s[:len(s)-2] + "a"
	}
	return s
}

func prefixed(f func(string) []string) func(string) []string {
	return func(s string) []string { return f(maskTrailingDash(s)) }
}

var uuidRE = regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`)

// formats are kube's ConstantFormats, by their CEL name.
var formats = map[string]*Format{
	"dns1123Label":           {Name: "DNS1123Label", validate: meta.ValidateDNS1123Label, maxRegexSize: 30},
	"dns1123Subdomain":       {Name: "DNS1123Subdomain", validate: meta.ValidateDNS1123Subdomain, maxRegexSize: 60},
	"dns1035Label":           {Name: "DNS1035Label", validate: validateDNS1035Label, maxRegexSize: 30},
	"qualifiedName":          {Name: "QualifiedName", validate: meta.ValidateQualifiedName, maxRegexSize: 60},
	"dns1123LabelPrefix":     {Name: "DNS1123LabelPrefix", validate: prefixed(meta.ValidateDNS1123Label), maxRegexSize: 30},
	"dns1123SubdomainPrefix": {Name: "DNS1123SubdomainPrefix", validate: prefixed(meta.ValidateDNS1123Subdomain), maxRegexSize: 60},
	"dns1035LabelPrefix":     {Name: "DNS1035LabelPrefix", validate: prefixed(validateDNS1035Label), maxRegexSize: 30},
	"labelValue":             {Name: "LabelValue", validate: meta.ValidateLabelValue, maxRegexSize: 40},
	"uri": {Name: "URI", maxRegexSize: 1104, validate: func(s string) []string {
		if _, err := url.ParseRequestURI(s); err != nil {
			return []string{err.Error()}
		}
		return nil
	}},
	"uuid": {Name: "uuid", maxRegexSize: len(uuidRE.String()), validate: func(s string) []string {
		if !uuidRE.MatchString(s) {
			return []string{"does not match the UUID format"}
		}
		return nil
	}},
	"byte": {Name: "byte", maxRegexSize: 83, validate: func(s string) []string {
		if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			return []string{"invalid base64"}
		}
		return nil
	}},
	"date": {Name: "date", maxRegexSize: 72, validate: func(s string) []string {
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return []string{"invalid date"}
		}
		return nil
	}},
	"datetime": {Name: "datetime", maxRegexSize: 72, validate: func(s string) []string {
		if _, err := ParseDateTime(s); err != nil {
			return []string{"invalid datetime"}
		}
		return nil
	}},
}

// dateTimeLayouts are the RFC 3339 forms kube-openapi's strfmt accepts for
// format date-time.
var dateTimeLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05Z07:00",
}

// ParseDateTime parses an OpenAPI date-time string as strfmt does.
func ParseDateTime(s string) (time.Time, error) {
	var err error
	for _, l := range dateTimeLayouts {
		var t time.Time
		if t, err = time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// Formats returns the format library: format.named(), format.<name>() for
// each of kube's named formats, and <Format>.validate().
func Formats() cel.EnvOption { return cel.Lib(formatLib{}) }

type formatLib struct{}

func (formatLib) LibraryName() string { return "format" }

func (formatLib) CompileOptions() []cel.EnvOption {
	opts := []cel.EnvOption{
		cel.Function("validate", cel.MemberOverload("format-validate", []*cel.Type{FormatType, cel.StringType},
			cel.OptionalType(cel.ListType(cel.StringType)), cel.BinaryBinding(func(fv, sv ref.Val) ref.Val {
				f, ok := fv.(*Format)
				if !ok {
					return types.MaybeNoSuchOverloadErr(fv)
				}
				s, ok := sv.Value().(string)
				if !ok {
					return types.MaybeNoSuchOverloadErr(sv)
				}
				if msgs := f.validate(s); len(msgs) > 0 {
					return types.OptionalOf(types.NewStringList(types.DefaultTypeAdapter, msgs))
				}
				return types.OptionalNone
			}))),
		cel.Function("format.named", cel.Overload("format-named", []*cel.Type{cel.StringType},
			cel.OptionalType(FormatType), cel.UnaryBinding(func(v ref.Val) ref.Val {
				s, ok := v.Value().(string)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				if f, ok := formats[s]; ok {
					return types.OptionalOf(f)
				}
				return types.OptionalNone
			}))),
	}
	for name, f := range formats {
		id := "format." + name
		opts = append(opts, cel.Function(id, cel.Overload(id, nil, FormatType,
			cel.FunctionBinding(func(...ref.Val) ref.Val { return f }))))
	}
	return opts
}

func (formatLib) ProgramOptions() []cel.ProgramOption { return nil }
