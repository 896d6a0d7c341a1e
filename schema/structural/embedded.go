package structural

import (
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
	if s == nil {
		return nil
	}
	var errs meta.FieldErrors
	switch t := value.(type) {
	case map[string]any:
		if s.EmbeddedResource {
			errs = append(errs, validateEmbeddedObject(t, p)...)
		}
		for _, k := range sortedKeys(t) {
			if prop, ok := s.Property(k); ok {
				errs = append(errs, validateEmbedded(prop, t[k], p.Child(k))...)
			} else if s.AdditionalProperties != nil {
				errs = append(errs, validateEmbedded(s.AdditionalProperties, t[k], p.Key(k))...)
			}
		}
	case []any:
		for i, item := range t {
			errs = append(errs, validateEmbedded(s.Items, item, p.Index(i))...)
		}
	}
	return errs
}

func validateEmbeddedObject(x map[string]any, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if _, ok := x["apiVersion"]; !ok {
		errs = append(errs, meta.Required(p.Child("apiVersion"), "must not be empty"))
	}
	if _, ok := x["kind"]; !ok {
		errs = append(errs, meta.Required(p.Child("kind"), "must not be empty"))
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
			if msgs := validateDNS1035Label(strings.ToLower(s)); len(msgs) > 0 {
				errs = append(errs, meta.Invalid(kp, s, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
			}
		}
	}
	if v, ok := x["metadata"]; ok {
		errs = append(errs, validateEmbeddedMetadata(v, p.Child("metadata"))...)
	}
	return errs
}

// embeddedMeta is the part of an embedded object's metadata that is
// validated.
type embeddedMeta struct {
	name, generateName, namespace string
	labels, annotations           map[string]string
	finalizers                    []string
}

// readEmbeddedMeta reads metadata the way decoding it into ObjectMeta
// would, failing on a field of the wrong type.
func readEmbeddedMeta(v any) (embeddedMeta, error) {
	var m embeddedMeta
	obj, ok := v.(map[string]any)
	if !ok {
		return m, fmt.Errorf("expected object, got %s", describe(v))
	}
	str := func(k string, to *string) error {
		f, ok := obj[k]
		if !ok || f == nil {
			return nil
		}
		s, ok := f.(string)
		if !ok {
			return fmt.Errorf(".metadata.%s accessor error: %v is of the type %s, expected string", k, f, describe(f))
		}
		*to = s
		return nil
	}
	strMap := func(k string, to *map[string]string) error {
		f, ok := obj[k]
		if !ok || f == nil {
			return nil
		}
		fm, ok := f.(map[string]any)
		if !ok {
			return fmt.Errorf(".metadata.%s accessor error: %v is of the type %s, expected map[string]interface{}", k, f, describe(f))
		}
		*to = make(map[string]string, len(fm))
		for key, e := range fm {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf(".metadata.%s accessor error: contains non-string value in the map under key %q: %v is of the type %s, expected string", k, key, e, describe(e))
			}
			(*to)[key] = s
		}
		return nil
	}
	for _, err := range []error{
		str("name", &m.name), str("generateName", &m.generateName), str("namespace", &m.namespace),
		strMap("labels", &m.labels), strMap("annotations", &m.annotations),
	} {
		if err != nil {
			return m, err
		}
	}
	if f, ok := obj["finalizers"]; ok && f != nil {
		l, ok := f.([]any)
		if !ok {
			return m, fmt.Errorf(".metadata.finalizers accessor error: %v is of the type %s, expected []interface{}", f, describe(f))
		}
		for _, e := range l {
			s, ok := e.(string)
			if !ok {
				return m, fmt.Errorf(".metadata.finalizers accessor error: contains non-string value in the slice: %v is of the type %s, expected string", e, describe(e))
			}
			m.finalizers = append(m.finalizers, s)
		}
	}
	return m, nil
}

// describe names a value's Go type as Kubernetes' unstructured accessors
// do in their errors.
func describe(v any) string {
	switch v.(type) {
	case map[string]any:
		return "map[string]interface {}"
	case []any:
		return "[]interface {}"
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("%T", v)
}

func validateEmbeddedMetadata(v any, p *meta.Path) meta.FieldErrors {
	m, err := readEmbeddedMeta(v)
	if err != nil {
		return meta.FieldErrors{meta.Invalid(p, v, err.Error())}
	}
	var errs meta.FieldErrors
	if m.generateName != "" {
		for _, msg := range pathSegmentName(m.generateName, true) {
			errs = append(errs, meta.Invalid(p.Child("generateName"), m.generateName, msg))
		}
	}
	// kube-apiserver checks an embedded object without a name as if it
	// had one: the name is often filled in later (a pod template's).
	if m.name != "" {
		for _, msg := range pathSegmentName(m.name, false) {
			errs = append(errs, meta.Invalid(p.Child("name"), m.name, msg))
		}
	}
	if m.namespace != "" {
		for _, msg := range meta.ValidateDNS1123Label(m.namespace) {
			errs = append(errs, meta.Invalid(p.Child("namespace"), m.namespace, msg))
		}
	}
	for _, k := range sortedStringKeys(m.labels) {
		for _, msg := range meta.ValidateQualifiedName(k) {
			errs = append(errs, meta.Invalid(p.Child("labels"), k, msg))
		}
		for _, msg := range meta.ValidateLabelValue(m.labels[k]) {
			errs = append(errs, meta.Invalid(p.Child("labels").Key(k), m.labels[k], msg))
		}
	}
	total := 0
	for _, k := range sortedStringKeys(m.annotations) {
		for _, msg := range meta.ValidateQualifiedName(strings.ToLower(k)) {
			errs = append(errs, meta.Invalid(p.Child("annotations"), k, msg))
		}
		total += len(k) + len(m.annotations[k])
	}
	const totalAnnotationSizeLimit = 256 * 1024
	if total > totalAnnotationSizeLimit {
		errs = append(errs, meta.TooLong(p.Child("annotations"), "", totalAnnotationSizeLimit))
	}
	seen := make(map[string]bool, len(m.finalizers))
	for i, f := range m.finalizers {
		for _, msg := range meta.ValidateQualifiedName(f) {
			errs = append(errs, meta.Invalid(p.Child("finalizers").Index(i), f, msg))
		}
		if seen[f] {
			errs = append(errs, meta.Duplicate(p.Child("finalizers").Index(i), f))
		}
		seen[f] = true
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

// pathSegmentName is Kubernetes' rule for names that appear in a URL path
// (custom resources' and embedded objects' names): not "." or "..", no
// "/" or "%". A generateName prefix may be "." or "..".
func pathSegmentName(name string, prefix bool) []string {
	if !prefix {
		for _, bad := range []string{".", ".."} {
			if name == bad {
				return []string{fmt.Sprintf("may not be '%s'", bad)}
			}
		}
	}
	var msgs []string
	for _, bad := range []string{"/", "%"} {
		if strings.Contains(name, bad) {
			msgs = append(msgs, fmt.Sprintf("may not contain '%s'", bad))
		}
	}
	return msgs
}

// validateDNS1035Label is RFC 1035's label: what a kind must be, lowered.
func validateDNS1035Label(s string) []string {
	var msgs []string
	if len(s) > 63 {
		msgs = append(msgs, "must be no more than 63 characters")
	}
	if !rxDNS1035.MatchString(s) {
		msgs = append(msgs, `a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`)
	}
	return msgs
}
