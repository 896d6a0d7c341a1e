package registry

import "github.com/apikit-dev/apikit/meta"

// ValidateLabels checks label keys and values as kube-apiserver's
// ValidateLabels does, under path p: for what changes labels outside an
// object's own write (a conversion webhook's answer).
func ValidateLabels(labels map[string]string, p *meta.Path) meta.FieldErrors {
	return validateLabels(labels, p)
}

// ValidateAnnotations checks annotation keys and their total size as
// kube-apiserver's ValidateAnnotations does, under path p.
func ValidateAnnotations(annotations map[string]string, p *meta.Path) meta.FieldErrors {
	return validateAnnotations(annotations, p)
}
