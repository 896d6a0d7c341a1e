package policyset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/schema/structural"
)

// Resources finds the resources a server serves: those a policy's
// paramKind names, the namespaces whose objects namespaceObject shows, and
// those whose schemas type-check a policy.
type Resources interface {
	// ResourceFor returns the resource that serves kind, false when none
	// does (yet: a CRD's kind may appear later).
	ResourceFor(kind meta.GroupVersionKind) (registry.Resource, bool)
	// ResourceOf returns the resource served as gvr, false when none is.
	ResourceOf(gvr meta.GroupVersionResource) (registry.Resource, bool)
}

// Param is a parameter object as the expressions see it: its JSON value,
// with the metadata the informer keys and selects it by.
type Param struct {
	meta.TypeMeta
	meta.ObjectMeta
	// Value is the object as params shows it.
	Value map[string]any
}

func toParam(it registry.Item) (*Param, error) {
	obj, err := it.Object()
	if err != nil {
		return nil, fmt.Errorf("decoding a param: %w", err)
	}
	data, err := it.JSON()
	if err != nil {
		return nil, err
	}
	v, err := structural.DecodeJSON(data)
	if err != nil {
		return nil, fmt.Errorf("decoding a param: %w", err)
	}
	m, _ := v.(map[string]any)
	return &Param{TypeMeta: *obj.GetTypeMeta(), ObjectMeta: *obj.GetObjectMeta(), Value: m}, nil
}

// paramInformer watches the objects of one paramKind for every policy
// that names it; it is stopped once no bound policy does.
type paramInformer struct {
	kind       meta.GroupVersionKind
	res        registry.Resource
	namespaced bool
	inf        *informer.Informer[*Param]
	cancel     context.CancelFunc
}

// paramState is a bound policy's paramKind: its informer, or the
// configuration error of a kind no resource serves.
type paramState struct {
	kind *registration.ParamKind
	inf  *paramInformer
	err  error
}

// KindString is apimachinery's GroupVersionKind.String, which kube's
// messages print.
func KindString(k meta.GroupVersionKind) string {
	return k.Group + "/" + k.Version + ", Kind=" + k.Kind
}

// paramKindString is the generated String of kube's v1 ParamKind.
func paramKindString(k *registration.ParamKind) string {
	return "&ParamKind{APIVersion:" + k.APIVersion + ",Kind:" + k.Kind + ",}"
}

// params runs the paramKind informers: started as bound policies need
// them, stopped when none does, all stopped when the Source's WatchParams
// ends.
type params struct {
	resources Resources
	ctx       context.Context
	log       *slog.Logger
	wg        sync.WaitGroup
	running   map[meta.GroupVersionKind]*paramInformer
	// unresolved is set when a bound policy's paramKind was not served at
	// the last rebuild: WatchParams then rebuilds at the next change of
	// the resources (or second).
	unresolved bool
}

// ensure returns the state of a bound policy's paramKind, starting its
// informer when none runs; used collects the kinds in use.
func (ps *params) ensure(k *registration.ParamKind, used map[meta.GroupVersionKind]bool) *paramState {
	st := &paramState{kind: k}
	gv, err := meta.ParseGroupVersion(k.APIVersion)
	if err != nil {
		st.err = fmt.Errorf("failed to parse paramKind APIVersion: %w", err)
		return st
	}
	gvk := gv.WithKind(k.Kind)
	used[gvk] = true
	if pi, ok := ps.running[gvk]; ok {
		st.inf = pi
		return st
	}
	var res registry.Resource
	ok := false
	// Once WatchParams has ended no informer starts: nothing would stop it.
	if ps.resources != nil && ps.ctx != nil && ps.ctx.Err() == nil {
		res, ok = ps.resources.ResourceFor(gvk)
	}
	if !ok {
		ps.unresolved = true
		st.err = fmt.Errorf("failed to find resource referenced by paramKind: '%s'", KindString(gvk))
		return st
	}
	ctx, cancel := context.WithCancel(ps.ctx)
	pi := &paramInformer{kind: gvk, res: res, namespaced: res.Info().NamespaceScoped, cancel: cancel}
	pi.inf = informer.New(informer.Config[*Param]{Source: informer.ItemSource(func() registry.Resource { return res }, toParam), Name: "params " + KindString(gvk), Logger: ps.log})
	ps.running[gvk] = pi
	ps.wg.Go(func() { pi.inf.Run(ctx) })
	st.inf = pi
	return st
}

// stopUnused stops the informers of kinds no bound policy names.
func (ps *params) stopUnused(used map[meta.GroupVersionKind]bool) {
	for k, pi := range ps.running {
		if !used[k] {
			pi.cancel()
			delete(ps.running, k)
		}
	}
}

// dropGone stops the informers of kinds no longer served (a CRD
// deleted) and reports whether there were any.
func (ps *params) dropGone() bool {
	gone := false
	for k, pi := range ps.running {
		if _, ok := ps.resources.ResourceFor(k); !ok {
			pi.cancel()
			delete(ps.running, k)
			gone = true
		}
	}
	return gone
}

// errParamsNotFound is kube-apiserver's refusal of a binding whose params
// are missing with parameterNotFoundAction Deny.
var errParamsNotFound = errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")

// collect returns the params a binding's paramRef selects for a write in
// namespace ns, as kube-apiserver's CollectParams does: one nil for a
// policy without paramKind or a binding without paramRef; none when they
// are missing and the binding allows that.
func (st *paramState) collect(ctx context.Context, ref *registration.ParamRef, ns string) ([]*Param, error) {
	if st == nil || ref == nil {
		return []*Param{nil}, nil
	}
	pi := st.inf
	if pi == nil {
		return nil, fmt.Errorf("paramKind kind `%s` not known", paramKindString(st.kind))
	}
	paramNS := ""
	if pi.namespaced {
		paramNS = ns
		if ref.Namespace != "" {
			paramNS = ref.Namespace
		} else if paramNS == "" {
			return nil, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	}
	// A param kind just started has a second to list its objects.
	wait, cancel := context.WithTimeout(ctx, time.Second)
	err := pi.inf.WaitForSync(wait)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("paramKind kind `%s` not yet synced to use for admission", paramKindString(st.kind))
	}
	var out []*Param
	switch {
	case ref.Namespace != "" && !pi.namespaced:
		return nil, errors.New("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	case ref.Name != "":
		if p, ok := pi.inf.Get(paramNS, ref.Name); ok {
			out = append(out, p)
			break
		}
		// As kube-apiserver: a param created just before the write may
		// not have reached the informer; ask the resource.
		it, err := pi.res.Get(ctx, paramNS, ref.Name, meta.GetOptions{})
		switch {
		case err == nil:
			p, err := toParam(it)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		case meta.IsNotFound(err):
		default:
			return nil, err
		}
	case ref.Selector != nil:
		sel, err := ref.Selector.AsSelector()
		if err != nil {
			return nil, err
		}
		for _, p := range pi.inf.List() {
			if (!pi.namespaced || p.Namespace == paramNS) && sel.Matches(meta.Set(p.Labels)) {
				out = append(out, p)
			}
		}
	default:
		return nil, errors.New("one of name or selector must be provided")
	}
	if len(out) == 0 && ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == registration.DenyAction {
		return nil, errParamsNotFound
	}
	return out, nil
}

// namespaceKind is the core group's Namespace.
var namespaceKind = meta.GroupVersionKind{Version: "v1", Kind: "Namespace"}

// namespaceMetadata are the metadata fields namespaceObject shows, as
// kube-apiserver's CreateNamespaceObject copies them (no managedFields,
// no ownerReferences).
var namespaceMetadata = []string{"name", "generateName", "namespace", "uid", "resourceVersion", "generation",
	"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "finalizers"}

// namespacesOf returns the resource rs serves namespaces with, nil when it
// serves none.
func namespacesOf(rs Resources) registry.Resource {
	if rs == nil {
		return nil
	}
	r, ok := rs.ResourceFor(namespaceKind)
	if !ok {
		return nil
	}
	return r
}

// namespaceObject returns the namespace of a namespaced write, read from
// namespaces, as admission policies' namespaceObject variable shows it
// (kube's Namespace type: metadata's public fields, spec, status): nil for
// a cluster-scoped write, a write to a namespace itself, or no namespaces
// (namespaces nil).
func namespaceObject(ctx context.Context, namespaces registry.Resource, a *admission.Attributes) (map[string]any, error) {
	if a.Namespace == "" || a.Kind == namespaceKind || namespaces == nil {
		return nil, nil
	}
	it, err := namespaces.Get(ctx, "", a.Namespace, meta.GetOptions{})
	if err != nil {
		return nil, err
	}
	ns, err := toParam(it)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, k := range []string{"spec", "status"} {
		if v, ok := ns.Value[k]; ok {
			out[k] = v
		}
	}
	md := map[string]any{}
	if m, ok := ns.Value["metadata"].(map[string]any); ok {
		for _, k := range namespaceMetadata {
			if v, ok := m[k]; ok {
				md[k] = v
			}
		}
	}
	out["metadata"] = md
	return out, nil
}
