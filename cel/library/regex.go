package library

import (
	"regexp"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
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

// ProgramOptions compile constant patterns when a program is built, as
// kube's regex library does.
func (regexLib) ProgramOptions() []cel.ProgramOption {
	return []cel.ProgramOption{cel.OptimizeRegex(RegexOptimizations...)}
}

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

// RegexOptimizations compile a constant pattern of find and findAll once,
// when the program is built, instead of on every call.
var RegexOptimizations = []*interpreter.RegexOptimization{
	{Function: "find", RegexIndex: 1, Factory: func(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, err
		}
		return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(args ...ref.Val) ref.Val {
			s, ok := args[0].Value().(string)
			if !ok || len(args) != 2 {
				return types.MaybeNoSuchOverloadErr(args[0])
			}
			return types.String(re.FindString(s))
		}), nil
	}},
	{Function: "findAll", RegexIndex: 1, Factory: func(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, err
		}
		return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(args ...ref.Val) ref.Val {
			s, ok := args[0].Value().(string)
			if !ok {
				return types.MaybeNoSuchOverloadErr(args[0])
			}
			n := int64(-1)
			if len(args) == 3 {
				if n, ok = args[2].Value().(int64); !ok {
					return types.MaybeNoSuchOverloadErr(args[2])
				}
			}
			if n > int64(len(s)) {
				n = -1
			}
			return types.DefaultTypeAdapter.NativeToValue(re.FindAllString(s, int(n)))
		}), nil
	}},
}
