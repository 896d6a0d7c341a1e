package endpoints

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server/fieldmanager"
	"github.com/apikit-dev/apikit/server/respond"
)

// applyPatchType is server-side apply's content type; JSON is YAML too.
const applyPatchType = "application/apply-patch+yaml"

// fieldManagers keep the managedFields of the main resource and of its
// status; nil when the scope has no schema (then nothing is recorded and
// apply is refused). They are built at the resource's first write, not at
// install: a server installs dozens of resources (RBAC, flow control,
// admission registration) that an idle server never writes through its
// handlers, and each manager holds a structured-merge-diff schema.
type fieldManagers struct {
	once         sync.Once
	main, status *fieldmanager.Manager
}

// initFieldManagers builds the scope's field managers from its schema.
func (s *Scope) initFieldManagers() {
	if s.Schemas == nil || s.Schema == nil {
		return
	}
	cfg := fieldmanager.Config{Schemas: s.Schemas, Schema: s.Schema, GVK: s.gvk, New: s.Resource.New, Versions: s.versions()}
	if s.info.StatusSubresource {
		// Writes to the main resource never own status, and writes to
		// status own only status, as kube-apiserver's reset fields.
		cfg.IgnoredFields = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	}
	main, err := fieldmanager.New(cfg)
	if err != nil {
		slog.Error("server-side apply unavailable", "resource", s.groupResource().String(), "err", err)
		return
	}
	s.managers.main = main
	if s.info.StatusSubresource {
		cfg.Subresource = "status"
		cfg.IgnoredFields = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
		if s.managers.status, err = fieldmanager.New(cfg); err != nil {
			slog.Error("server-side apply unavailable", "resource", s.groupResource().String()+"/status", "err", err)
		}
	}
}

// versions describes the resource's served versions for the field
// managers' conversions; a version whose Go type has no schema, or that
// cannot convert, is left out (its entries are then dropped, not compared).
func (s *Scope) versions() map[string]fieldmanager.Version {
	out := map[string]fieldmanager.Version{}
	for _, res := range s.Versions {
		to, ok1 := res.(registry.StorageConverter)
		from, ok2 := res.(registry.VersionConverter)
		if !ok1 || !ok2 {
			continue
		}
		shape, err := s.Schemas.AddType(reflect.TypeOf(res.New()))
		if err != nil {
			continue
		}
		out[res.Info().GroupVersion.String()] = fieldmanager.Version{Schema: shape, New: res.New, ToStorage: to.ToStorage, FromStorage: from.ToServed}
	}
	return out
}

func (s *Scope) fieldManager(subresource string) *fieldmanager.Manager {
	s.managers.once.Do(s.initFieldManagers)
	if subresource == "status" {
		return s.managers.status
	}
	return s.managers.main
}

// recordUpdate records obj's Update entry for the request's manager; live
// is the object before the write (nil on create).
func (s *Scope) recordUpdate(r *http.Request, live, obj meta.Object, fieldManager, subresource string) {
	fm := s.fieldManager(subresource)
	if fm == nil {
		return
	}
	if err := fm.Update(live, obj, fieldmanager.ManagerName(fieldManager, r.UserAgent())); err != nil {
		slog.Error("failed to update managedFields; kept the live object's", "resource", s.groupResource().String(), "name", obj.GetObjectMeta().Name, "err", err)
	}
}

// tooLarge reports whether storage refused a write as too large. An
// object's managedFields can make it so: kube-apiserver then writes it
// again without them, and so do the handlers (all but apply).
func tooLarge(err error) bool {
	return meta.ReasonForError(err) == meta.StatusReasonRequestEntityTooLarge
}

// validatePatchOptions checks the options kube-apiserver checks per patch
// type: apply needs a fieldManager, only apply takes force.
func validatePatchOptions(opts meta.PatchOptions, apply bool) error {
	var errs meta.FieldErrors
	if !apply && opts.Force != nil {
		errs = append(errs, meta.Forbidden(meta.NewPath("force"), "may not be specified for non-apply patch"))
	}
	if apply && opts.FieldManager == "" {
		errs = append(errs, meta.Required(meta.NewPath("fieldManager"), "is required for apply patch"))
	}
	if len(errs) > 0 {
		return meta.NewInvalid(meta.GroupKind{Group: "meta.k8s.io", Kind: "PatchOptions"}, "", errs)
	}
	return nil
}

// apply serves a server-side apply patch: it merges the applied
// configuration into the object, or creates the object from it (201).
func (s *Scope) apply(w http.ResponseWriter, r *http.Request, ns, name, subresource string, opts meta.PatchOptions, form outputForm) {
	fm := s.fieldManager(subresource)
	if fm == nil {
		respond.Error(w, r, meta.NewUnsupportedMediaType(applyPatchType, supportedPatchTypes))
		return
	}
	if err := validatePatchOptions(opts, true); err != nil {
		respond.Error(w, r, err)
		return
	}
	body, err := readBody(w, r, s.MaxRequestBodyBytes)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	patch, err := yaml.YAMLToJSON(body)
	if err != nil {
		respond.Error(w, r, meta.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err)))
		return
	}
	if err := fm.CheckApplyPatch(patch); err != nil {
		respond.Error(w, r, err)
		return
	}
	force := opts.Force != nil && *opts.Force
	dryRun := len(opts.DryRun) > 0
	// The configuration is checked as any body is (unknown and duplicate
	// fields under fieldValidation), and must name this object.
	cfg := s.Resource.New()
	warnings, err := decodeObject(patch, cfg, s.gvk, opts.FieldValidation)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if n := cfg.GetObjectMeta().Name; n != name {
		respond.Error(w, r, meta.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", n, name)))
		return
	}
	manager := opts.FieldManager
	applyTo := func(_ context.Context, current meta.Object) (meta.Object, error) {
		if current == nil {
			return nil, meta.NewNotFound(s.groupResource(), name)
		}
		return fm.Apply(current, patch, manager, force)
	}
	admit, validate := s.admissionFuncs(r.Context(), w, admission.Update, ns, name, subresource, dryRun)
	uo := registry.UpdateOptions{WriteOptions: registry.WriteOptions{DryRun: dryRun, Admit: admit, Validate: validate}, Subresource: subresource}
	it, _, err := s.Resource.Update(withValidationWarnings(r.Context(), w), ns, name, applyTo, uo)
	code := http.StatusOK
	if meta.IsNotFound(err) && subresource == "" {
		// Apply creates what is missing, as kube-apiserver's apply does
		// whether or not the resource allows create on update.
		var obj meta.Object
		if obj, err = fm.Apply(nil, patch, manager, force); err == nil {
			admit, validate := s.admissionFuncs(r.Context(), w, admission.Create, ns, "", "", dryRun)
			it, err = s.Resource.Create(r.Context(), ns, obj, registry.WriteOptions{DryRun: dryRun, Admit: admit, Validate: validate})
			code = http.StatusCreated
		}
	}
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	writeWarnings(w, warnings)
	s.writeItem(w, r, code, it, form)
}
