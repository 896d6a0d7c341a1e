package library

import (
	"regexp"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// Regex returns the regex library: <string>.find(<regex>) and
// <string>.findAll(<regex>[, <limit>]).
func Regex() cel.EnvOption { return cel.Lib(regexLib{}) }

type regexLib struct{}

func (regexLib) LibraryName() string { return "k8s.regex" }

func (regexLib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("find", cel.MemberOverload("string_find_string",
			[]*cel.Type{cel.StringType, cel.StringType}, cel.StringType, cel.BinaryBinding(find))),
		cel.Function("findAll",
			cel.MemberOverload("string_find_all_string", []*cel.Type{cel.StringType, cel.StringType},
				cel.ListType(cel.StringType), cel.BinaryBinding(func(s, re ref.Val) ref.Val { return findAll(s, re, types.Int(-1)) })),
			cel.MemberOverload("string_find_all_string_int", []*cel.Type{cel.StringType, cel.StringType, cel.IntType},
				cel.ListType(cel.StringType), cel.FunctionBinding(func(args ...ref.Val) ref.Val { return findAll(args[0], args[1], args[2]) }))),
	}
}

func (regexLib) ProgramOptions() []cel.ProgramOption { return nil }

func compileRegex(re ref.Val) (*regexp.Regexp, ref.Val) {
	s, ok := re.Value().(string)
	if !ok {
		return nil, types.MaybeNoSuchOverloadErr(re)
	}
	r, err := regexp.Compile(s)
	if err != nil {
		return nil, types.NewErr("Illegal regex: %v", err.Error())
	}
	return r, nil
}

func find(str, re ref.Val) ref.Val {
	s, ok := str.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(str)
	}
	r, errVal := compileRegex(re)
	if errVal != nil {
		return errVal
	}
	return types.String(r.FindString(s))
}

func findAll(str, re, limit ref.Val) ref.Val {
	s, ok := str.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(str)
	}
	n, ok := limit.Value().(int64)
	if !ok {
		return types.MaybeNoSuchOverloadErr(limit)
	}
	r, errVal := compileRegex(re)
	if errVal != nil {
		return errVal
	}
	// A limit beyond the string's length finds no more than -1 does, and
	// keeps an int64 from overflowing int on 32-bit platforms.
	if n > int64(len(s)) {
		n = -1
	}
	return types.DefaultTypeAdapter.NativeToValue(r.FindAllString(s, int(n)))
}
