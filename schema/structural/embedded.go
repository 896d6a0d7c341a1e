package structural

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// ValidateEmbeddedResource checks every x-kubernetes-embedded-resource
// object within value (not value itself: a custom resource's own metadata
// is the registry's to check) as apiextensions-apiserver does: apiVersion
// and kind are required strings, apiVersion a group/version, kind a DNS
// label in any case, and metadata, when given, valid object metadata (name
// and generateName path segments, namespace a DNS label, labels,
// annotations, finalizers). Validate calls it; call it alone only for
// values that skip Validate.
func ValidateEmbeddedResource(s *schema.Schema, value any) meta.FieldErrors {
	return validateEmbedded(s, value, nil)
}

func validateEmbedded(s *schema.Schema, value any, p *meta.Path) meta.FieldErrors {
	w := &embeddedWalk{lazyPath: lazyPath{base: p}}
	w.walk(s, value)
	sortByField(w.errs)
	return w.errs
}

type embeddedWalk struct {
	lazyPath
	errs meta.FieldErrors
}

func (w *embeddedWalk) walk(s *schema.Schema, value any) {
	if s == nil {
		return
	}
	switch t := value.(type) {
	case map[string]any:
		if s.EmbeddedResource {
			w.errs = append(w.errs, validateEmbeddedObject(t, w.path())...)
		}
		for k, v := range t {
			if prop, ok := s.Property(k); ok {
				w.push(step{kind: childStep, name: k})
				w.walk(prop, v)
				w.pop()
			} else if s.AdditionalProperties != nil {
				w.push(step{kind: keyStep, name: k})
				w.walk(s.AdditionalProperties, v)
				w.pop()
			}
		}
	case []any:
		for i, item := range t {
			w.push(step{kind: indexStep, index: i})
			w.walk(s.Items, item)
			w.pop()
		}
	}
}

func validateEmbeddedObject(x map[string]any, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if _, ok := x["apiVersion"]; !ok {
		errs = append(errs, meta.Required(p.Child("apiVersion"), ""))
	}
	if _, ok := x["kind"]; !ok {
		errs = append(errs, meta.Required(p.Child("kind"), ""))
	}
	if v, ok := x["apiVersion"]; ok {
		ap := p.Child("apiVersion")
		switch s, isString := v.(string); {
		case !isString:
			errs = append(errs, meta.Invalid(ap, v, "must be a string"))
		case s == "":
			errs = append(errs, meta.Invalid(ap, s, "must not be empty"))
		case strings.Count(s, "/") > 1:
			errs = append(errs, meta.Invalid(ap, s, fmt.Sprintf("unexpected GroupVersion string: %s", s)))
		}
	}
	if v, ok := x["kind"]; ok {
		kp := p.Child("kind")
		switch s, isString := v.(string); {
		case !isString:
			errs = append(errs, meta.Invalid(kp, v, "must be a string"))
		case s == "":
			errs = append(errs, meta.Invalid(kp, s, "must not be empty"))
		default:
			if msgs := meta.ValidateDNS1035Label(strings.ToLower(s)); len(msgs) > 0 {
				errs = append(errs, meta.Invalid(kp, s, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
			}
		}
	}
	if v, ok := x["metadata"]; ok {
		errs = append(errs, validateEmbeddedMetadata(v, p.Child("metadata"))...)
	}
	return errs
}

// embeddedMeta is what is checked of an embedded object's metadata.
type embeddedMeta struct {
	Name, GenerateName, Namespace string
	Generation                    int64
	Labels, Annotations           map[string]string
	OwnerReferences               []ownerReference
	Finalizers                    []string
}

type ownerReference struct {
	APIVersion, Kind, Name, UID string
	Controller                  *bool
}

// readEmbeddedMeta decodes metadata as kube-apiserver decodes it into an
// ObjectMeta, failing with encoding/json's error for a field of the wrong
// type.
func readEmbeddedMeta(v any) (*embeddedMeta, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// Named as Kubernetes names them: encoding/json puts the type and
	// field names in its messages.
	type UID string
	type OwnerReference struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Name       string `json:"name"`
		UID        UID    `json:"uid"`
		Controller *bool  `json:"controller,omitempty"`
	}
	type ObjectMeta struct {
		Name                       string            `json:"name,omitempty"`
		GenerateName               string            `json:"generateName,omitempty"`
		Namespace                  string            `json:"namespace,omitempty"`
		SelfLink                   string            `json:"selfLink,omitempty"`
		UID                        UID               `json:"uid,omitempty"`
		ResourceVersion            string            `json:"resourceVersion,omitempty"`
		Generation                 int64             `json:"generation,omitempty"`
		DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
		Labels                     map[string]string `json:"labels,omitempty"`
		Annotations                map[string]string `json:"annotations,omitempty"`
		OwnerReferences            []OwnerReference  `json:"ownerReferences,omitempty"`
		Finalizers                 []string          `json:"finalizers,omitempty"`
	}
	var m ObjectMeta
	if err := json.Unmarshal(data, &m); err != nil {
		msg := strings.NewReplacer("structural.ObjectMeta", "v1.ObjectMeta", "structural.UID", "types.UID").Replace(err.Error())
		return nil, errors.New(msg)
	}
	out := &embeddedMeta{
		Name: m.Name, GenerateName: m.GenerateName, Namespace: m.Namespace, Generation: m.Generation,
		Labels: m.Labels, Annotations: m.Annotations, Finalizers: m.Finalizers,
	}
	for _, r := range m.OwnerReferences {
		out.OwnerReferences = append(out.OwnerReferences, ownerReference{r.APIVersion, r.Kind, r.Name, string(r.UID), r.Controller})
	}
	return out, nil
}

// validateEmbeddedMetadata is kube-apiserver's ObjectMeta validation of an
// embedded object's metadata, the name checked only when there is one
// (kube checks a stand-in name: an embedded object's is often filled in
// later).
func validateEmbeddedMetadata(v any, p *meta.Path) meta.FieldErrors {
	m, err := readEmbeddedMeta(v)
	if err != nil {
		return meta.FieldErrors{meta.Invalid(p, v, err.Error())}
	}
	var errs meta.FieldErrors
	if m.GenerateName != "" {
		for _, msg := range meta.ValidatePathSegmentName(m.GenerateName, true) {
			errs = append(errs, meta.Invalid(p.Child("generateName"), m.GenerateName, msg))
		}
	}
	if m.Name != "" {
		for _, msg := range meta.ValidatePathSegmentName(m.Name, false) {
			errs = append(errs, meta.Invalid(p.Child("name"), m.Name, msg))
		}
	}
	if m.Namespace != "" {
		for _, msg := range meta.ValidateDNS1123Label(m.Namespace) {
			errs = append(errs, meta.Invalid(p.Child("namespace"), m.Namespace, msg))
		}
	}
	if m.Generation < 0 {
		errs = append(errs, meta.Invalid(p.Child("generation"), m.Generation, "must be greater than or equal to 0"))
	}
	for _, k := range sortedStringKeys(m.Labels) {
		for _, msg := range meta.ValidateQualifiedName(k) {
			errs = append(errs, meta.Invalid(p.Child("labels"), k, msg))
		}
		for _, msg := range meta.ValidateLabelValue(m.Labels[k]) {
			errs = append(errs, meta.Invalid(p.Child("labels"), m.Labels[k], msg))
		}
	}
	total := 0
	for _, k := range sortedStringKeys(m.Annotations) {
		for _, msg := range meta.ValidateQualifiedName(strings.ToLower(k)) {
			errs = append(errs, meta.Invalid(p.Child("annotations"), k, msg))
		}
		total += len(k) + len(m.Annotations[k])
	}
	const totalAnnotationSizeLimit = 256 * 1024
	if total > totalAnnotationSizeLimit {
		errs = append(errs, meta.TooLong(p.Child("annotations"), "", totalAnnotationSizeLimit))
	}
	errs = append(errs, validateOwnerReferences(m.OwnerReferences, p.Child("ownerReferences"))...)
	orphan, foreground := false, false
	for _, f := range m.Finalizers {
		for _, msg := range meta.ValidateQualifiedName(f) {
			errs = append(errs, meta.Invalid(p.Child("finalizers"), f, msg))
		}
		orphan = orphan || f == "orphan"
		foreground = foreground || f == "foregroundDeletion"
	}
	if orphan && foreground {
		errs = append(errs, meta.Invalid(p.Child("finalizers"), m.Finalizers, "finalizer orphan and foregroundDeletion cannot be both set"))
	}
	return errs
}

func validateOwnerReferences(refs []ownerReference, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	controller := ""
	for i, r := range refs {
		rp := p.Index(i)
		if r.APIVersion == "" {
			errs = append(errs, meta.Required(rp.Child("apiVersion"), "must not be empty"))
		} else if strings.Count(r.APIVersion, "/") > 1 || strings.HasSuffix(r.APIVersion, "/") {
			errs = append(errs, meta.Invalid(rp.Child("apiVersion"), r.APIVersion, "must be <group>/<version> or <version>"))
		}
		for _, f := range []struct{ name, value string }{{"kind", r.Kind}, {"name", r.Name}, {"uid", r.UID}} {
			if f.value == "" {
				errs = append(errs, meta.Required(rp.Child(f.name), "must not be empty"))
			}
		}
		if r.Controller != nil && *r.Controller {
			name := r.Kind + "/" + r.Name
			if controller != "" {
				errs = append(errs, meta.Invalid(p, refs, fmt.Sprintf("Only one reference can have Controller set to true. Found \"true\" in references for %v and %v", controller, name)))
			} else {
				controller = name
			}
		}
	}
	return errs
}

func sortedStringKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}
