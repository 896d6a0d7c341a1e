package policy

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/admission/policyset"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/cel/library"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/schema"
)

// maxTypesToCheck is how many matched kinds kube type-checks a policy
// against.
const maxTypesToCheck = 10

// Schemaed is a resource that knows its objects' schema (a custom
// resource's version); the schema of any other resource is reflected from
// the Go type of its objects.
type Schemaed interface {
	Schema() *schema.Schema
}

// resourceSchema returns the schema of a resource's objects, references
// inlined, nil when it has none.
func resourceSchema(res registry.Resource) *schema.Schema {
	if s, ok := res.(Schemaed); ok {
		return s.Schema()
	}
	set := schema.NewSet()
	n, err := set.AddType(reflect.TypeOf(res.New()))
	if err != nil {
		return nil
	}
	return inline(set, n, map[string]bool{})
}

// inline returns n with its references replaced by the named schemas; a
// reference to a schema being inlined (a recursive type) is left out, as
// a field no expression can see.
func inline(set *schema.Set, n *schema.Schema, open map[string]bool) *schema.Schema {
	if n == nil {
		return nil
	}
	if ref := n.Ref; ref != "" {
		if open[ref] {
			return nil
		}
		named, err := set.Resolve(n)
		if err != nil {
			return nil
		}
		open[ref] = true
		defer delete(open, ref)
		n = named
	}
	c := *n
	c.Properties = nil
	for _, p := range n.Properties {
		if ps := inline(set, p.Schema, open); ps != nil {
			c.Properties = append(c.Properties, schema.Property{Name: p.Name, Schema: ps})
		}
	}
	c.Items = inline(set, n.Items, open)
	c.AdditionalProperties = inline(set, n.AdditionalProperties, open)
	c.AllOf, c.AnyOf, c.OneOf, c.Not = nil, nil, nil, nil
	return &c
}

// namespaceSchema is kube's hand-made Namespace type of namespaceObject
// (its metadata's uid is spelt UID, as kube spells it).
var namespaceSchema = func() *schema.Schema {
	str := &schema.Schema{Type: "string"}
	ts := &schema.Schema{Type: "string", Format: "date-time"}
	strs := &schema.Schema{Type: "array", Items: str}
	strMap := &schema.Schema{Type: "object", AdditionalProperties: str}
	obj := func(props ...schema.Property) *schema.Schema {
		return &schema.Schema{Type: "object", Properties: props}
	}
	return obj(
		schema.Property{Name: "metadata", Schema: obj(
			schema.Property{Name: "name", Schema: str}, schema.Property{Name: "generateName", Schema: str},
			schema.Property{Name: "namespace", Schema: str}, schema.Property{Name: "labels", Schema: strMap},
			schema.Property{Name: "annotations", Schema: strMap}, schema.Property{Name: "UID", Schema: str},
			schema.Property{Name: "creationTimestamp", Schema: ts},
			schema.Property{Name: "deletionGracePeriodSeconds", Schema: &schema.Schema{Type: "integer"}},
			schema.Property{Name: "deletionTimestamp", Schema: ts},
			schema.Property{Name: "generation", Schema: &schema.Schema{Type: "integer"}},
			schema.Property{Name: "resourceVersion", Schema: str}, schema.Property{Name: "finalizers", Schema: strs})},
		schema.Property{Name: "spec", Schema: obj(schema.Property{Name: "finalizers", Schema: strs})},
		schema.Property{Name: "status", Schema: obj(
			schema.Property{Name: "conditions", Schema: &schema.Schema{Type: "array", Items: obj(
				schema.Property{Name: "status", Schema: str}, schema.Property{Name: "type", Schema: str},
				schema.Property{Name: "lastTransitionTime", Schema: ts}, schema.Property{Name: "message", Schema: str},
				schema.Property{Name: "reason", Schema: str})}},
			schema.Property{Name: "phase", Schema: str})},
	)
}()

// typedKind is a kind a policy matches, with its schema.
type typedKind struct {
	kind   meta.GroupVersionKind
	schema *schema.Schema
}

// kindsToCheck are the kinds (at most maxTypesToCheck, in group, version,
// kind order) of the resources a policy's resourceRules name without
// wildcards, that are served with a schema, as kube's type checker picks
// them.
func kindsToCheck(p *registration.ValidatingAdmissionPolicy, rs policyset.Resources) []typedKind {
	m := p.Spec.MatchConstraints
	if m == nil {
		return nil
	}
	seen := map[meta.GroupVersionKind]bool{}
	var out []typedKind
	for _, r := range m.ResourceRules {
		if slices.ContainsFunc(r.APIGroups, func(s string) bool { return strings.Contains(s, "*") }) ||
			slices.ContainsFunc(r.APIVersions, func(s string) bool { return strings.Contains(s, "*") }) {
			continue
		}
		resources := slices.DeleteFunc(slices.Clone(r.Resources), func(s string) bool { return strings.ContainsAny(s, "*/") })
		for _, g := range slices.Sorted(slices.Values(r.APIGroups)) {
			for _, v := range slices.Sorted(slices.Values(r.APIVersions)) {
				for _, res := range slices.Sorted(slices.Values(resources)) {
					served, ok := rs.ResourceOf(meta.GroupVersionResource{Group: g, Version: v, Resource: res})
					if !ok {
						continue
					}
					k := meta.GroupVersionKind{Group: g, Version: v, Kind: served.Info().Kind}
					if seen[k] {
						continue
					}
					seen[k] = true
					if s := resourceSchema(served); s != nil {
						out = append(out, typedKind{kind: k, schema: s})
					}
					if len(seen) == maxTypesToCheck {
						return sortKinds(out)
					}
				}
			}
		}
	}
	return sortKinds(out)
}

func sortKinds(ks []typedKind) []typedKind {
	slices.SortFunc(ks, func(a, b typedKind) int {
		return cmp.Or(cmp.Compare(a.kind.Group, b.kind.Group), cmp.Compare(a.kind.Version, b.kind.Version), cmp.Compare(a.kind.Kind, b.kind.Kind))
	})
	return ks
}

// TypeCheck type-checks the validations (expressions and
// messageExpressions) of p against the schema of every kind it matches
// that rs serves, with params typed by the paramKind's schema (dyn when
// it has none) and namespaceObject as kube's Namespace, and returns the
// warnings kube's policy type-checking controller writes to
// status.typeChecking: one per expression, a line per kind.
func TypeCheck(p *registration.ValidatingAdmissionPolicy, rs policyset.Resources) []registration.ExpressionWarning {
	kinds := kindsToCheck(p, rs)
	if len(kinds) == 0 {
		return nil
	}
	var params *schema.Schema
	if k := p.Spec.ParamKind; k != nil {
		if gv, err := meta.ParseGroupVersion(k.APIVersion); err == nil {
			if res, ok := rs.ResourceFor(gv.WithKind(k.Kind)); ok {
				params = resourceSchema(res)
			}
		}
	}
	compilers := make([]*cel.Compiler, len(kinds))
	for i, k := range kinds {
		vars := []cel.Variable{
			{Name: cel.ObjectVarName, Schema: k.schema, ResourceRoot: true},
			{Name: cel.OldObjectVarName, Schema: k.schema, ResourceRoot: true},
			{Name: cel.NamespaceObjectVarName, Schema: namespaceSchema},
			{Name: cel.RequestVarName}, {Name: cel.VariablesVarName},
			{Name: cel.AuthorizerVarName, Type: library.AuthorizerType},
			{Name: cel.RequestResourceVarName, Type: library.ResourceCheckType},
		}
		if p.Spec.ParamKind != nil {
			vars = append(vars, cel.Variable{Name: cel.ParamsVarName, Schema: params, ResourceRoot: params != nil})
		}
		c, err := cel.NewCompiler(vars...)
		if err != nil {
			// A schema CEL cannot type: check against the others.
			continue
		}
		compilers[i] = c
	}
	check := func(expr string) string {
		var lines []string
		for i, c := range compilers {
			if c == nil {
				continue
			}
			_, err := c.Compile(expr, nil)
			var ce *cel.CompileError
			if !errors.As(err, &ce) || !strings.HasPrefix(ce.Detail, "compilation failed: ") {
				continue
			}
			lines = append(lines, policyset.KindString(kinds[i].kind)+": "+strings.TrimPrefix(ce.Detail, "compilation failed: ")+"\n")
		}
		return strings.Join(lines, "\n")
	}
	var out []registration.ExpressionWarning
	for i, v := range p.Spec.Validations {
		at := "spec.validations[" + strconv.Itoa(i) + "]."
		if w := check(v.Expression); w != "" {
			out = append(out, registration.ExpressionWarning{FieldRef: at + "expression", Warning: w})
		}
		if v.MessageExpression == "" {
			continue
		}
		if w := check(v.MessageExpression); w != "" {
			out = append(out, registration.ExpressionWarning{FieldRef: at + "messageExpression", Warning: w})
		}
	}
	return out
}

// runTypeChecking writes status.typeChecking and status.observedGeneration
// of every policy whose generation is newer than its status says, as
// kube's policy type-checking controller does, each time changed signals
// and once a second while a write failed, until ctx ends.
func runTypeChecking(ctx context.Context, store *registry.Store[*registration.ValidatingAdmissionPolicy], list func() []*registration.ValidatingAdmissionPolicy,
	rs policyset.Resources, changed <-chan struct{}, log *slog.Logger) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-retry.C:
		}
		failed := false
		for _, p := range list() {
			if p.Generation <= p.Status.ObservedGeneration {
				continue
			}
			warnings := TypeCheck(p, rs)
			gen := p.Generation
			_, _, err := store.Update(ctx, "", p.Name, func(_ context.Context, cur *registration.ValidatingAdmissionPolicy) (*registration.ValidatingAdmissionPolicy, error) {
				if cur.Generation != gen {
					// Changed since: the next round checks the new one.
					return cur, nil
				}
				cur.Status.ObservedGeneration = gen
				cur.Status.TypeChecking = &registration.TypeChecking{ExpressionWarnings: warnings}
				return cur, nil
			}, registry.UpdateOptions{Subresource: "status"})
			if err != nil && !meta.IsNotFound(err) && ctx.Err() == nil {
				log.Warn("writing a ValidatingAdmissionPolicy's type checking", "policy", p.Name, "err", err)
				failed = true
			}
		}
		if failed {
			retry.Reset(time.Second)
		}
	}
}
