package library

import (
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// JSONPatch is Kubernetes' jsonpatch library, declared where
// MutatingAdmissionPolicy expressions are compiled:
//
//	jsonpatch.escapeKey(<string>) <string>
//
// escapes a map key for a JSON Patch path (RFC 6901: "~" as "~0", "/" as
// "~1"), so "/metadata/labels/" + jsonpatch.escapeKey("k8s.io/a~b") is
// "/metadata/labels/k8s.io~1a~0b".
func JSONPatch() cel.EnvOption { return cel.Lib(jsonPatchLib{}) }

type jsonPatchLib struct{}

func (jsonPatchLib) LibraryName() string { return "kubernetes.jsonpatch" }

func (jsonPatchLib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{cel.Function("jsonpatch.escapeKey",
		cel.Overload("string_jsonpatch_escapeKey_string", []*cel.Type{cel.StringType}, cel.StringType,
			cel.UnaryBinding(escapeKey)))}
}

func (jsonPatchLib) ProgramOptions() []cel.ProgramOption { return nil }

// One pass, so the "~" a "/" became is not escaped again.
var jsonPointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapeKey(arg ref.Val) ref.Val {
	s, ok := arg.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	return types.String(jsonPointerEscaper.Replace(s))
}
