package extensions

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/server/fieldmanager"
	"github.com/apikit-dev/apikit/server/respond"
)

// Scale is autoscaling/v1 Scale, what a custom resource's scale
// subresource reads and writes.
type Scale struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            ScaleSpec   `json:"spec,omitempty"`
	Status          ScaleStatus `json:"status,omitempty"`
}

// ScaleSpec is the desired number of replicas.
type ScaleSpec struct {
	Replicas int32 `json:"replicas,omitempty"`
}

// ScaleStatus is the observed number of replicas and their label selector.
type ScaleStatus struct {
	Replicas int32  `json:"replicas"`
	Selector string `json:"selector,omitempty"`
}

var scaleGV = meta.GroupVersion{Group: "autoscaling", Version: "v1"}

// scaleSubresource serves <resource>/{name}/scale for one served version.
type scaleSubresource struct {
	res                          registry.Resource
	specPath, statusPath, labels jsonPath
	gr                           meta.GroupResource
	gvr                          meta.GroupVersionResource
	maxBody                      int64
	// admission runs on every write of the Scale, as kube-apiserver runs
	// it on the scale subresource: with the Scale objects.
	admission admission.Chain
	// replicas is the spec replicas path's fields, as the managedFields
	// of the object name them.
	replicas []string
}

// installScale adds the scale routes (get, update, patch) to ws.
func installScale(ws *restful.WebService, res registry.Resource, cfg *CustomResourceSubresourceScale, maxBody int64, chain admission.Chain) error {
	info := res.Info()
	sc := &scaleSubresource{res: res, gr: meta.GroupResource{Group: info.GroupVersion.Group, Resource: info.Resource},
		gvr: info.GroupVersion.WithResource(info.Resource), maxBody: maxBody, admission: chain}
	var err error
	if sc.specPath, err = parseJSONPath(cfg.SpecReplicasPath); err != nil {
		return err
	}
	sc.replicas = pathFields(cfg.SpecReplicasPath)
	if sc.statusPath, err = parseJSONPath(cfg.StatusReplicasPath); err != nil {
		return err
	}
	if cfg.LabelSelectorPath != nil && *cfg.LabelSelectorPath != "" {
		if sc.labels, err = parseJSONPath(*cfg.LabelSelectorPath); err != nil {
			return err
		}
	}
	path := "/" + info.Resource + "/{name}/scale"
	if info.NamespaceScoped {
		path = "/namespaces/{namespace}/" + info.Resource + "/{name}/scale"
	}
	route := func(rb *restful.RouteBuilder, h http.HandlerFunc) {
		ws.Route(endpoints.To(rb, h).Metadata(endpoints.MetadataKind, "Scale").
			Metadata(endpoints.MetadataKindGroupVersion, scaleGV).Writes(Scale{}))
	}
	route(ws.GET(path), sc.get)
	route(ws.PUT(path), sc.update)
	route(ws.PATCH(path), sc.patch)
	return nil
}

// scaleOf builds an object's Scale as kube-apiserver does: absent
// replicas are 0.
func (sc *scaleSubresource) scaleOf(o *Object) *Scale {
	s := &Scale{TypeMeta: meta.TypeMeta{APIVersion: scaleGV.String(), Kind: "Scale"}}
	m := o.ObjectMeta
	s.ObjectMeta = meta.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, CreationTimestamp: m.CreationTimestamp}
	if v, ok := sc.specPath.find(o); ok {
		s.Spec.Replicas = int32(asInt(v))
	}
	if v, ok := sc.statusPath.find(o); ok {
		s.Status.Replicas = int32(asInt(v))
	}
	if sc.labels != nil {
		if v, ok := sc.labels.find(o); ok {
			s.Status.Selector, _ = v.(string)
		}
	}
	return s
}

func asInt(v any) int64 {
	switch t := v.(type) {
	case int64:
		return t
	case float64:
		return int64(t)
	}
	return 0
}

func (sc *scaleSubresource) get(w http.ResponseWriter, r *http.Request) {
	info, _ := request.InfoFrom(r.Context())
	it, err := sc.res.Get(r.Context(), info.Namespace, info.Name, meta.ParseGetOptions(request.Query(r)))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	obj, err := it.Object()
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	respond.Object(w, r, http.StatusOK, sc.scaleOf(obj.(*Object)))
}

func (sc *scaleSubresource) update(w http.ResponseWriter, r *http.Request) {
	sc.write(w, r, func(_ *Scale, body []byte) (*Scale, error) {
		var s Scale
		if err := json.Unmarshal(body, &s); err != nil {
			return nil, meta.NewBadRequest(fmt.Sprintf("error decoding request body: %v", err))
		}
		return &s, nil
	})
}

func (sc *scaleSubresource) patch(w http.ResponseWriter, r *http.Request) {
	ct := r.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	sc.write(w, r, func(cur *Scale, body []byte) (*Scale, error) {
		old, err := json.Marshal(cur)
		if err != nil {
			return nil, meta.NewInternalError(err)
		}
		var patched []byte
		switch ct {
		case "application/merge-patch+json", "application/strategic-merge-patch+json":
			patched, err = jsonpatch.MergePatch(old, body)
		case "application/json-patch+json":
			var p jsonpatch.Patch
			if p, err = jsonpatch.DecodePatch(body); err == nil {
				patched, err = p.Apply(old)
			}
		default:
			return nil, meta.NewUnsupportedMediaType(ct, []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"})
		}
		if err != nil {
			return nil, meta.NewBadRequest(err.Error())
		}
		var s Scale
		if err := json.Unmarshal(patched, &s); err != nil {
			return nil, meta.NewBadRequest(fmt.Sprintf("error decoding patched object: %v", err))
		}
		return &s, nil
	})
}

// attributes are the admission attributes of a write of the Scale: kind
// autoscaling/v1 Scale, the custom resource's resource and the
// subresource "scale", the new and the current Scale, as kube-apiserver
// admits a scale update.
func (sc *scaleSubresource) attributes(ctx context.Context, info *request.Info, s, old *Scale, dryRun bool) *admission.Attributes {
	user, _ := authn.UserFrom(ctx)
	return &admission.Attributes{Operation: admission.Update, Kind: scaleGV.WithKind("Scale"), Resource: sc.gvr, Subresource: "scale",
		Namespace: info.Namespace, Name: info.Name, Object: s, OldObject: old, DryRun: dryRun, User: user}
}

// write updates the object's spec replicas from the Scale that change
// makes of the current one; the write goes through the resource's store
// (its strategy, its preconditions).
func (sc *scaleSubresource) write(w http.ResponseWriter, r *http.Request, change func(cur *Scale, body []byte) (*Scale, error)) {
	info, _ := request.InfoFrom(r.Context())
	q := request.Query(r)
	opts, err := meta.ParseUpdateOptions(q)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, sc.maxBody+1))
	if err != nil || int64(len(body)) > sc.maxBody {
		respond.Error(w, r, meta.NewRequestEntityTooLarge(fmt.Sprintf("limit is %d", sc.maxBody)))
		return
	}
	var result *Scale
	dryRun := len(opts.DryRun) > 0
	manager := fieldmanager.ManagerName(opts.FieldManager, r.UserAgent())
	// Admission's warnings and the strategy's (a ratcheted CEL rule's
	// failure, as kube-apiserver sends it) are collected for the last
	// attempt of the update.
	var warnings []string
	collect := func(msg string) { warnings = append(warnings, msg) }
	it, _, err := sc.res.Update(admission.WithWarnings(r.Context(), collect), info.Namespace, info.Name, func(ctx context.Context, current meta.Object) (meta.Object, error) {
		if current == nil {
			return nil, meta.NewNotFound(sc.gr, info.Name)
		}
		cur := current.(*Object)
		old := sc.scaleOf(cur)
		s, err := change(sc.scaleOf(cur), body)
		if err != nil {
			return nil, err
		}
		warnings = warnings[:0] // a retried update admits again
		if len(sc.admission) == 0 {
			return sc.apply(cur, old, s, info.Name, manager, &result)
		}
		a := sc.attributes(ctx, info, s, old, dryRun)
		ctx = admission.WithWarnings(ctx, collect)
		if err := sc.admission.Admit(ctx, a); err != nil {
			return nil, err
		}
		admitted, ok := a.Object.(*Scale)
		if !ok {
			return nil, meta.NewInternalError(fmt.Errorf("admission made the Scale of %s a %T", info.Name, a.Object))
		}
		s = admitted
		next, err := sc.apply(cur, old, s, info.Name, manager, &result)
		if err != nil {
			return nil, err
		}
		if err := sc.admission.Validate(ctx, a); err != nil {
			return nil, err
		}
		return next, nil
	}, registry.UpdateOptions{WriteOptions: registry.WriteOptions{DryRun: dryRun}})
	warn := respond.WarningsOnce(w)
	for _, msg := range warnings {
		warn(msg)
	}
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	obj, err := it.Object()
	if err != nil || result == nil {
		respond.Error(w, r, meta.NewInternalError(fmt.Errorf("scale of %s: %v", info.Name, err)))
		return
	}
	respond.Object(w, r, http.StatusOK, sc.scaleOf(obj.(*Object)))
}

// apply checks the Scale s, written by manager over old (cur's), and
// returns a copy of cur with its replicas and the write recorded in its
// managedFields, noting s in result.
func (sc *scaleSubresource) apply(cur *Object, old, s *Scale, name, manager string, result **Scale) (*Object, error) {
	if s.Spec.Replicas < 0 {
		return nil, meta.NewInvalid(meta.GroupKind{Group: "autoscaling", Kind: "Scale"}, name, meta.FieldErrors{
			meta.Invalid(meta.NewPath("spec", "replicas"), int64(s.Spec.Replicas), "must be greater than or equal to 0")})
	}
	if rv := s.ResourceVersion; rv != "" && rv != cur.ResourceVersion {
		return nil, meta.NewConflict(sc.gr, name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	next := cur.deepCopy()
	fields := next.Fields()
	if err := sc.specPath.set(fields, int64(s.Spec.Replicas)); err != nil {
		return nil, meta.NewBadRequest(err.Error())
	}
	next.SetFields(fields)
	managed, err := fieldmanager.ScaleUpdate(cur.ManagedFields, sc.replicas, sc.gvr.GroupVersion().String(), manager, s.Spec.Replicas != old.Spec.Replicas)
	if err != nil {
		return nil, meta.NewInternalError(fmt.Errorf("managedFields of %s: %w", name, err))
	}
	next.ManagedFields = managed
	*result = s
	return next, nil
}
