package registry

import (
	"fmt"
	"slices"

	"github.com/apikit-dev/apikit/meta"
)

// NameValidator checks a name (or, with prefix set, a generateName prefix)
// and returns human-readable problems.
type NameValidator func(name string, prefix bool) []string

// maskTrailingDash lets a generateName prefix end in "-" ("flunder-").
func maskTrailingDash(s string) string {
	if len(s) > 1 && s[len(s)-1] == '-' {
		return s[:len(s)-2] + "a"
	}
	return s
}

// ValidateDNSSubdomainName is the default NameValidator: names are RFC 1123
// subdomains, as for most Kubernetes resources.
func ValidateDNSSubdomainName(name string, prefix bool) []string {
	if prefix {
		name = maskTrailingDash(name)
	}
	return meta.ValidateDNS1123Subdomain(name)
}

// ValidateDNSLabelName is a NameValidator for names that must be RFC 1123
// labels (namespaces, for instance).
func ValidateDNSLabelName(name string, prefix bool) []string {
	if prefix {
		name = maskTrailingDash(name)
	}
	return meta.ValidateDNS1123Label(name)
}

const totalAnnotationSizeLimit = 256 * 1024

// ValidateObjectMeta checks the metadata every object shares, in
// apimachinery's ValidateObjectMetaAccessor's order: generateName, name
// (by nameFn), namespace, generation, labels, annotations, ownerReferences,
// finalizers. The store runs it on every write; a strategy calls it too
// where kube-apiserver's validates the metadata with a stricter name rule
// than its store's (events.k8s.io/v1's events).
func ValidateObjectMeta(m *meta.ObjectMeta, namespaced bool, nameFn NameValidator) meta.FieldErrors {
	var errs meta.FieldErrors
	p := meta.NewPath("metadata")
	if m.GenerateName != "" {
		for _, msg := range nameFn(m.GenerateName, true) {
			errs = append(errs, meta.Invalid(p.Child("generateName"), m.GenerateName, msg))
		}
	}
	if m.Name == "" {
		errs = append(errs, meta.Required(p.Child("name"), "name or generateName is required"))
	} else {
		for _, msg := range nameFn(m.Name, false) {
			errs = append(errs, meta.Invalid(p.Child("name"), m.Name, msg))
		}
	}
	if namespaced {
		if m.Namespace == "" {
			errs = append(errs, meta.Required(p.Child("namespace"), ""))
		} else {
			for _, msg := range ValidateDNSLabelName(m.Namespace, false) {
				errs = append(errs, meta.Invalid(p.Child("namespace"), m.Namespace, msg))
			}
		}
	} else if m.Namespace != "" {
		errs = append(errs, meta.Forbidden(p.Child("namespace"), "not allowed on this type"))
	}
	if m.Generation < 0 {
		errs = append(errs, meta.Invalid(p.Child("generation"), m.Generation, "must be greater than or equal to 0"))
	}
	errs = append(errs, validateLabels(m.Labels, p.Child("labels"))...)
	errs = append(errs, validateAnnotations(m.Annotations, p.Child("annotations"))...)
	for i, ref := range m.OwnerReferences {
		rp := p.Child("ownerReferences").Index(i)
		if ref.APIVersion == "" {
			errs = append(errs, meta.Invalid(rp.Child("apiVersion"), ref.APIVersion, "version must not be empty"))
		}
		if ref.Kind == "" {
			errs = append(errs, meta.Invalid(rp.Child("kind"), ref.Kind, "kind must not be empty"))
		}
		if ref.Name == "" {
			errs = append(errs, meta.Invalid(rp.Child("name"), ref.Name, "name must not be empty"))
		}
		if ref.UID == "" {
			errs = append(errs, meta.Invalid(rp.Child("uid"), ref.UID, "uid must not be empty"))
		}
	}
	errs = append(errs, validateControllerRefs(m.OwnerReferences, p.Child("ownerReferences"))...)
	return append(errs, validateFinalizers(m.Finalizers, p.Child("finalizers"))...)
}

func validateLabels(labels map[string]string, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	for k, v := range labels {
		for _, msg := range meta.ValidateQualifiedName(k) {
			errs = append(errs, meta.Invalid(p, k, msg))
		}
		for _, msg := range meta.ValidateLabelValue(v) {
			errs = append(errs, meta.Invalid(p.Key(k), v, msg))
		}
	}
	return errs
}

func validateAnnotations(annotations map[string]string, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	total := 0
	for k, v := range annotations {
		for _, msg := range meta.ValidateQualifiedName(lower(k)) {
			errs = append(errs, meta.Invalid(p, k, msg))
		}
		total += len(k) + len(v)
	}
	if total > totalAnnotationSizeLimit {
		errs = append(errs, meta.TooLong(p, "", totalAnnotationSizeLimit))
	}
	return errs
}

func validateFinalizers(finalizers []string, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	seen := make(map[string]bool, len(finalizers))
	for i, f := range finalizers {
		for _, msg := range meta.ValidateQualifiedName(f) {
			errs = append(errs, meta.Invalid(p.Index(i), f, msg))
		}
		if seen[f] {
			errs = append(errs, meta.Duplicate(p.Index(i), f))
		}
		seen[f] = true
	}
	// Orphaning the dependents and deleting them first contradict each
	// other: the garbage collector could honour only one.
	if seen[meta.FinalizerOrphanDependents] && seen[meta.FinalizerDeleteDependents] {
		errs = append(errs, meta.Invalid(p, finalizers, fmt.Sprintf("finalizer %s and %s cannot be both set", meta.FinalizerOrphanDependents, meta.FinalizerDeleteDependents)))
	}
	return errs
}

// validateControllerRefs refuses a second owner reference with controller
// set, in kube-apiserver's words: an object has at most one managing
// controller.
func validateControllerRefs(refs []meta.OwnerReference, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	first := ""
	for _, ref := range refs {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		name := ref.Kind + "/" + ref.Name
		if first == "" {
			first = name
			continue
		}
		errs = append(errs, meta.Invalid(p, refs, fmt.Sprintf("Only one reference can have Controller set to true. Found \"true\" in references for %s and %s", first, name)))
	}
	return errs
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

const fieldImmutable = "field is immutable"

// ValidateObjectMetaUpdate checks what an update may not change, in
// apimachinery's ValidateObjectMetaAccessorUpdate's order: new finalizers
// of an object being deleted, then the immutable fields. The store runs
// it on every update.
func ValidateObjectMetaUpdate(m, old *meta.ObjectMeta) meta.FieldErrors {
	var errs meta.FieldErrors
	p := meta.NewPath("metadata")
	if old.DeletionTimestamp != nil {
		have := make(map[string]bool, len(old.Finalizers))
		for _, f := range old.Finalizers {
			have[f] = true
		}
		var added []string
		for _, f := range m.Finalizers {
			if !have[f] && !slices.Contains(added, f) {
				added = append(added, f)
			}
		}
		if len(added) > 0 {
			// Kubernetes lists the new ones sorted, with %q of a []string.
			slices.Sort(added)
			errs = append(errs, meta.Forbidden(p.Child("finalizers"), fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %q", added)))
		}
	}
	if m.Name != old.Name {
		errs = append(errs, meta.Invalid(p.Child("name"), m.Name, fieldImmutable))
	}
	if m.Namespace != old.Namespace {
		errs = append(errs, meta.Invalid(p.Child("namespace"), m.Namespace, fieldImmutable))
	}
	if m.UID != old.UID {
		errs = append(errs, meta.Invalid(p.Child("uid"), m.UID, fieldImmutable))
	}
	if !m.CreationTimestamp.Equal(old.CreationTimestamp.Time) {
		errs = append(errs, meta.Invalid(p.Child("creationTimestamp"), m.CreationTimestamp.String(), fieldImmutable))
	}
	if !timesEqual(m.DeletionTimestamp, old.DeletionTimestamp) {
		errs = append(errs, meta.Invalid(p.Child("deletionTimestamp"), m.DeletionTimestamp, fieldImmutable))
	}
	if !int64PtrEqual(m.DeletionGracePeriodSeconds, old.DeletionGracePeriodSeconds) {
		errs = append(errs, meta.Invalid(p.Child("deletionGracePeriodSeconds"), m.DeletionGracePeriodSeconds, fieldImmutable))
	}
	return errs
}

func timesEqual(a, b *meta.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b.Time)
}

func int64PtrEqual(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
