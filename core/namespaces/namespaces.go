// Package namespaces serves the core group's namespaces (/api/v1/namespaces):
// cluster-scoped, with the status and finalize subresources, phase Active
// and Terminating, and the "kubernetes" finalizer in spec.finalizers that the
// namespace controller removes (through finalize) once the namespace is
// empty. A DELETE marks a namespace Terminating; it is gone once
// spec.finalizers and metadata.finalizers are both empty.
package namespaces

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/server/respond"
	"github.com/apikit-dev/apikit/storage"
)

// FinalizerKubernetes is the finalizer every namespace gets on create; the
// namespace controller removes it once the namespace's content is deleted.
const FinalizerKubernetes = "kubernetes"

// LabelMetadataName is the label every namespace carries with its own name,
// so that label selectors can pick namespaces by name.
const LabelMetadataName = "kubernetes.io/metadata.name"

// Phases of a namespace.
const (
	PhaseActive      = "Active"
	PhaseTerminating = "Terminating"
)

// Namespace is core/v1 Namespace.
type Namespace struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`

	Spec   NamespaceSpec   `json:"spec,omitempty" protobuf:"2"`
	Status NamespaceStatus `json:"status,omitempty" protobuf:"3"`
}

// SwaggerDoc describes Namespace in OpenAPI, in kube-apiserver's words.
func (Namespace) SwaggerDoc() map[string]string {
	return map[string]string{
		"":       "Namespace provides a scope for Names. Use of multiple namespaces is optional.",
		"spec":   "Spec defines the behavior of the Namespace. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status",
		"status": "Status describes the current status of a Namespace. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status",
	}
}

// ListSwaggerDoc describes NamespaceList in OpenAPI, in kube-apiserver's words.
func (Namespace) ListSwaggerDoc() map[string]string {
	return map[string]string{
		"":         "NamespaceList is a list of Namespaces.",
		"items":    "Items is the list of Namespace objects in the list. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/",
		"metadata": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
	}
}

// NamespaceSpec holds the finalizers of a namespace.
type NamespaceSpec struct {
	Finalizers []string `json:"finalizers,omitempty" listType:"atomic" protobuf:"1"`
}

// SwaggerDoc describes NamespaceSpec in OpenAPI, in kube-apiserver's words.
func (NamespaceSpec) SwaggerDoc() map[string]string {
	return map[string]string{
		"":           "NamespaceSpec describes the attributes on a Namespace.",
		"finalizers": "Finalizers is an opaque list of values that must be empty to permanently remove object from storage. More info: https://kubernetes.io/docs/tasks/administer-cluster/namespaces/",
	}
}

// NamespaceStatus is the phase and conditions of a namespace.
type NamespaceStatus struct {
	Phase      string               `json:"phase,omitempty" enum:"Active|Terminating" protobuf:"1"`
	Conditions []NamespaceCondition `json:"conditions,omitempty" listType:"map" listMapKeys:"type" patchStrategy:"merge" patchMergeKey:"type" protobuf:"2"`
}

// SwaggerDoc describes NamespaceStatus in OpenAPI, in kube-apiserver's words.
func (NamespaceStatus) SwaggerDoc() map[string]string {
	return map[string]string{
		"":           "NamespaceStatus is information about the current status of a Namespace.",
		"conditions": "Represents the latest available observations of a namespace's current state.",
		"phase":      "Phase is the current lifecycle phase of the namespace. More info: https://kubernetes.io/docs/tasks/administer-cluster/namespaces/\n\nPossible enum values:\n - `\"Active\"` means the namespace is available for use in the system\n - `\"Terminating\"` means the namespace is undergoing graceful termination",
	}
}

// NamespaceCondition is one observation of a namespace's state (the
// namespace controller's NamespaceDeletionDiscoveryFailure and kin).
type NamespaceCondition struct {
	Type               string     `json:"type" protobuf:"1"`
	Status             string     `json:"status" protobuf:"2"`
	LastTransitionTime *meta.Time `json:"lastTransitionTime,omitempty" protobuf:"4"`
	Reason             string     `json:"reason,omitempty" protobuf:"5"`
	Message            string     `json:"message,omitempty" protobuf:"6"`
}

// SwaggerDoc describes NamespaceCondition in OpenAPI, in kube-apiserver's words.
func (NamespaceCondition) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                   "NamespaceCondition contains details about state of namespace.",
		"lastTransitionTime": "Last time the condition transitioned from one status to another.",
		"message":            "Human-readable message indicating details about last transition.",
		"reason":             "Unique, one-word, CamelCase reason for the condition's last transition.",
		"status":             "Status of the condition, one of True, False, Unknown.",
		"type":               "Type of namespace controller condition.",
	}
}

// New returns the namespaces store on the storage f gives it.
func New(f storage.Factory) (*registry.Store[*Namespace], error) {
	resource := meta.GroupResource{Resource: "namespaces"}
	st, err := f.For(resource)
	if err != nil {
		return nil, fmt.Errorf("namespaces: %w", err)
	}
	return registry.NewStore(registry.Options[*Namespace]{
		Resource: resource,
		Kind:     "Namespace",
		// kube-apiserver's strategy validates the metadata first.
		MetadataErrorsFirst: true,
		NoGeneration:        true,
		ShortNames:          []string{"ns"},
		StorageVersion:      "v1",
		// kube-apiserver takes a PUT without a resourceVersion as
		// unconditional for namespaces.
		AllowUnconditionalUpdate: true,
		Strategy:                 strategy{},
		Storage:                  st,
		StatusSubresource:        true,
		NameValidator:            registry.ValidateDNSLabelName,
		Columns: []registry.Column[*Namespace]{
			{Name: "Status", Type: "string", Description: "The status of the namespace", Value: func(n *Namespace) any { return n.Status.Phase }},
		},
		Fields: func(n *Namespace) meta.Set { return meta.Set{"status.phase": n.Status.Phase} },
	})
}

type strategy struct {
	registry.DefaultStrategy[*Namespace]
}

// Default implements registry.Defaulter: the name label, as kube-apiserver
// sets it on every write.
func (strategy) Default(n *Namespace) {
	if n.Name == "" {
		return
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[LabelMetadataName] = n.Name
}

func (strategy) PrepareForCreate(_ context.Context, n *Namespace) {
	n.Status = NamespaceStatus{Phase: PhaseActive}
	if !slices.Contains(n.Spec.Finalizers, FinalizerKubernetes) {
		n.Spec.Finalizers = append(n.Spec.Finalizers, FinalizerKubernetes)
	}
}

// PrepareForUpdate keeps spec.finalizers: only finalize changes them.
func (strategy) PrepareForUpdate(_ context.Context, n, old *Namespace) {
	n.Spec.Finalizers = old.Spec.Finalizers
}

func (strategy) Validate(_ context.Context, n *Namespace) meta.FieldErrors {
	return validateFinalizers(n.Spec.Finalizers)
}

func (strategy) ValidateUpdate(_ context.Context, n, _ *Namespace) meta.FieldErrors {
	errs := validateFinalizers(n.Spec.Finalizers)
	if v := n.Labels[LabelMetadataName]; v != n.Name {
		// Defaulting sets it; an admission plugin must not change it.
		errs = append(errs, meta.Invalid(meta.NewPath("metadata", "labels").Key(LabelMetadataName), v, "must be "+n.Name))
	}
	return errs
}

// Finalizing implements registry.FinalizingStrategy: a namespace stays,
// Terminating, until spec.finalizers is empty.
func (strategy) Finalizing(n *Namespace) bool { return len(n.Spec.Finalizers) > 0 }

// PrepareForDelete implements registry.FinalizingStrategy. kube-apiserver's
// namespace delete sets only deletionTimestamp and the phase: no
// deletionGracePeriodSeconds, which the generic store sets on other kinds.
func (strategy) PrepareForDelete(n *Namespace) {
	n.Status.Phase = PhaseTerminating
	n.DeletionGracePeriodSeconds = nil
}

// validateFinalizers checks spec.finalizers as kube-apiserver does: each a
// qualified name, and one without a "/" must be a standard one (kubernetes).
func validateFinalizers(finalizers []string) meta.FieldErrors {
	var errs meta.FieldErrors
	p := meta.NewPath("spec", "finalizers")
	for i, f := range finalizers {
		for _, msg := range meta.ValidateQualifiedName(f) {
			errs = append(errs, meta.Invalid(p.Index(i), f, msg))
		}
		if len(meta.ValidateQualifiedName(f)) == 0 && !containsSlash(f) && f != FinalizerKubernetes {
			errs = append(errs, meta.Invalid(p.Index(i), f, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

// Routes adds PUT /namespaces/{name}/finalize to the core group's
// WebService: it replaces spec.finalizers, and nothing else, as
// kube-apiserver's finalize subresource.
func Routes(store *registry.Store[*Namespace]) func(ws *restful.WebService) {
	return func(ws *restful.WebService) {
		ws.Route(endpoints.To(ws.PUT("/namespaces/{name}/finalize"), finalizeHandler(store)).
			Operation("replaceCoreV1NamespaceFinalize").
			Doc("replace finalize of the specified Namespace").
			Param(ws.PathParameter("name", "name of the Namespace").DataType("string")).
			Consumes("application/json").Produces("application/json").
			Reads(Namespace{}).Writes(Namespace{}).
			Returns(http.StatusOK, "OK", Namespace{}).
			Metadata(endpoints.MetadataTag, "core_v1"))
	}
}

// maxFinalizeBody bounds a finalize request's body: a Namespace is small.
const maxFinalizeBody = 3 << 20

func finalizeHandler(store *registry.Store[*Namespace]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxFinalizeBody))
		if err != nil {
			respond.Error(w, r, meta.NewBadRequest(fmt.Sprintf("reading the request body: %v", err)))
			return
		}
		var in Namespace
		if err := json.Unmarshal(body, &in); err != nil {
			respond.Error(w, r, meta.NewBadRequest(fmt.Sprintf("decoding the Namespace: %v", err)))
			return
		}
		out, _, err := store.Update(r.Context(), "", name, func(_ context.Context, cur *Namespace) (*Namespace, error) {
			if in.Name != "" && in.Name != name {
				return nil, meta.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", in.Name, name))
			}
			if in.ResourceVersion != "" {
				cur.ResourceVersion = in.ResourceVersion
			}
			cur.Spec.Finalizers = in.Spec.Finalizers
			return cur, nil
		}, registry.UpdateOptions{Subresource: "finalize"})
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		out.TypeMeta = meta.TypeMeta{APIVersion: "v1", Kind: "Namespace"}
		respond.Object(w, r, http.StatusOK, out)
	})
}
