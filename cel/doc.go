// Package cel is apikit's Common Expression Language engine: Kubernetes'
// CEL environment (cel-go with kube-apiserver 1.37's libraries, language
// options and cost limits), the compilation of a schema's
// x-kubernetes-validations rules with self and oldSelf typed from the
// schema, and the validator that evaluates them on a JSON value with
// kube's runtime cost budget and messages.
//
// The extensions server compiles a CustomResourceDefinition's schema with
// CompileSchema when the CRD is written (refusing rules that do not
// compile or do not fit the cost budget) and validates custom resources
// with the returned Validator. Admission policies compile their
// expressions with a Compiler over declared variables.
//
// Values follow the convention schema/structural decodes JSON into:
// map[string]any, []any, string, bool, nil, int64 for integral numbers and
// float64 for others.
package cel
