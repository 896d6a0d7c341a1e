package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/meta"
)

// exempt are the resources no webhook sees, so that a broken webhook can
// always be removed (kube-apiserver's IsExemptAdmissionConfigurationResource).
var exempt = []string{
	"mutatingwebhookconfigurations", "validatingwebhookconfigurations",
	"validatingadmissionpolicies", "validatingadmissionpolicybindings",
	"mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
}

// match decides whether h is called for a: its rules (in the requested
// version, or with matchPolicy Equivalent in another served version of the
// resource), then its namespace and object selectors. It returns nil when
// h is not called, and an error that refuses the write when a selector
// cannot be evaluated.
func (w *Webhooks) match(ctx context.Context, h *hook, a *admission.Attributes) (*invocation, error) {
	if a.Resource.Group == registration.GroupName && slices.Contains(exempt, a.Resource.Resource) {
		return nil, nil
	}
	var inv *invocation
	if rulesMatch(h.rules, a.Operation, a.Resource, a.Subresource, a.Namespace) {
		inv = &invocation{h: h, kind: a.Kind, resource: a.Resource}
	} else if h.equivalent {
		for _, e := range a.Equivalents {
			if rulesMatch(h.rules, a.Operation, e.Resource, a.Subresource, a.Namespace) {
				inv = &invocation{h: h, kind: e.Kind, resource: e.Resource, toVersion: e.ToVersion, toStorage: e.ToStorage, equivalent: true}
				break
			}
		}
	}
	if inv == nil {
		return nil, nil
	}
	if h.selectorErr != nil {
		return nil, meta.NewInternalError(h.selectorErr)
	}
	ok, err := w.matchNamespace(ctx, h, a)
	if err != nil || !ok {
		return nil, err
	}
	if !h.objectSelector.Empty() && !labelsMatch(h.objectSelector, a.Object) && !labelsMatch(h.objectSelector, a.OldObject) {
		return nil, nil
	}
	return inv, nil
}

func labelsMatch(s meta.Selector, obj meta.Object) bool {
	if obj == nil {
		return false
	}
	return s.Matches(meta.Set(obj.GetObjectMeta().Labels))
}

// matchNamespace is kube-apiserver's namespace matcher: cluster-scoped
// requests always match; a namespaced one matches its namespace's labels.
func (w *Webhooks) matchNamespace(ctx context.Context, h *hook, a *admission.Attributes) (bool, error) {
	return namespaceMatches(ctx, w.cfg.Namespaces, h.namespaceSelector, a)
}

func namespaceMatches(ctx context.Context, namespaces NamespaceLabels, sel meta.Selector, a *admission.Attributes) (bool, error) {
	isNamespace := a.Resource.Group == "" && a.Resource.Resource == "namespaces"
	if (a.Namespace == "" && !isNamespace) || sel.Empty() {
		return true, nil
	}
	if isNamespace {
		// A namespace is matched by its own labels: those it is created
		// or updated with, else (a delete, a subresource) those stored,
		// what kube reads from its namespace lister then.
		o := a.OldObject
		if a.Subresource == "" && (a.Operation == admission.Create || a.Operation == admission.Update) {
			o = a.Object
		}
		if o != nil {
			return sel.Matches(meta.Set(o.GetObjectMeta().Labels)), nil
		}
	}
	if namespaces == nil {
		return sel.Matches(nil), nil
	}
	labels, err := namespaces.NamespaceLabels(ctx, a.Namespace)
	if err != nil {
		if meta.IsNotFound(err) {
			return false, err
		}
		return false, meta.NewInternalError(fmt.Errorf("looking up namespace %q: %w", a.Namespace, err))
	}
	return sel.Matches(meta.Set(labels)), nil
}

// rulesMatch reports whether any rule matches, as kube-apiserver's rule
// matcher decides.
func rulesMatch(rules []registration.RuleWithOperations, op admission.Operation, gvr meta.GroupVersionResource, sub, namespace string) bool {
	for i := range rules {
		r := &rules[i]
		if ruleMatches(r, op, gvr, sub, namespace) {
			return true
		}
	}
	return false
}

func ruleMatches(r *registration.RuleWithOperations, op admission.Operation, gvr meta.GroupVersionResource, sub, namespace string) bool {
	if !slices.ContainsFunc(r.Operations, func(o registration.OperationType) bool {
		return o == registration.OperationAll || string(o) == string(op)
	}) {
		return false
	}
	if !anyOf(r.APIGroups, gvr.Group) || !anyOf(r.APIVersions, gvr.Version) {
		return false
	}
	if !slices.ContainsFunc(r.Resources, func(rs string) bool {
		res, s, _ := strings.Cut(rs, "/")
		return (res == "*" || res == gvr.Resource) && (s == "*" || s == sub)
	}) {
		return false
	}
	isNamespace := gvr.Group == "" && gvr.Resource == "namespaces"
	switch {
	case r.Scope == nil || *r.Scope == registration.AllScopes:
		return true
	case *r.Scope == registration.NamespacedScope:
		return !isNamespace && namespace != ""
	case *r.Scope == registration.ClusterScope:
		return isNamespace || namespace == ""
	}
	return false
}

func anyOf(values []string, v string) bool {
	return slices.Contains(values, "*") || slices.Contains(values, v)
}
