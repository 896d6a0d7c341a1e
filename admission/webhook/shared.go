package webhook

import (
	"context"
	"slices"

	"github.com/google/cel-go/common/types"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema/structural"
)

// What the ValidatingAdmissionPolicy plugin (package admission/policy)
// shares with the webhooks, so that both match writes and present them to
// CEL alike, as kube-apiserver's shared matchers do.

// Exempt reports whether a is a write to the admission configuration
// itself, which no webhook or policy sees (so a broken one can always be
// removed).
func Exempt(a *admission.Attributes) bool {
	return a.Resource.Group == registration.GroupName && slices.Contains(exempt, a.Resource.Resource)
}

// RuleMatches reports whether r matches a's operation, a's subresource and
// namespace, and gvr (a's resource, or an equivalent's).
func RuleMatches(r *registration.RuleWithOperations, a *admission.Attributes, gvr meta.GroupVersionResource) bool {
	return ruleMatches(r, a.Operation, gvr, a.Subresource, a.Namespace)
}

// NamespaceMatches is kube-apiserver's namespace matcher: a cluster-scoped
// write always matches; a namespaced one by its namespace's labels, which
// namespaces gives (nil: every namespace unlabelled).
func NamespaceMatches(ctx context.Context, namespaces NamespaceLabels, sel meta.Selector, a *admission.Attributes) (bool, error) {
	return namespaceMatches(ctx, namespaces, sel, a)
}

// ObjectMatches is kube-apiserver's object matcher: the labels of the new
// or of the old object.
func ObjectMatches(sel meta.Selector, a *admission.Attributes) bool {
	return sel.Empty() || labelsMatch(sel, a.Object) || labelsMatch(sel, a.OldObject)
}

// ExpressionVars returns object, oldObject and request as admission CEL
// expressions see them, for a write matched as kind and resource: a's own
// (its versioned objects), or an equivalent's (a's storage-version
// objects converted by toVersion, nil when that is the storage version).
// Without request (no expression reads it) the map has no request: its
// UID and views are a third of what the variables cost to build.
func ExpressionVars(a *admission.Attributes, kind meta.GroupVersionKind, resource meta.GroupVersionResource, toVersion func(meta.Object) (meta.Object, error), request bool) (map[string]any, error) {
	inv := &invocation{kind: kind, resource: resource, toVersion: toVersion, equivalent: resource != a.Resource}
	obj, old, err := inv.objects(a)
	if err != nil {
		return nil, err
	}
	// The objects are read where an expression selects from them: their
	// JSON round trip was most of a policy's cost on a write.
	view := func(o meta.Object) (any, error) {
		if o == nil {
			return nil, nil
		}
		var defaults []cel.FieldDefault
		if o.GetTypeMeta().Kind == "" {
			defaults = []cel.FieldDefault{{Name: "apiVersion", Value: kind.GroupVersion().String()}, {Name: "kind", Value: kind.Kind}}
		}
		if v, ok := cel.JSONView(o, defaults...); ok {
			return v, nil
		}
		data, err := encode(o, kind)
		if err != nil {
			return nil, meta.NewInternalError(err)
		}
		j, err := structural.DecodeJSON(data)
		if err != nil {
			return nil, meta.NewInternalError(err)
		}
		return types.DefaultTypeAdapter.NativeToValue(j), nil
	}
	objV, err := view(obj)
	if err != nil {
		return nil, err
	}
	oldV, err := view(old)
	if err != nil {
		return nil, err
	}
	if !request {
		return map[string]any{cel.ObjectVarName: objV, cel.OldObjectVarName: oldV}, nil
	}
	return expressionVars(requestOf(inv, a), objV, oldV, options(a)), nil
}
