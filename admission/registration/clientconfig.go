package registration

import "github.com/apikit-dev/apikit/meta"

// ValidateWebhookURL checks a webhook's url as kube-apiserver's
// ValidateWebhookURL does with https forced, under path p: for the other
// webhooks a server calls (a CRD's conversion webhook).
func ValidateWebhookURL(p *meta.Path, raw string) meta.FieldErrors { return validateWebhookURL(p, raw) }

// ValidateWebhookService checks a webhook's service reference (name,
// namespace, port, path) as kube-apiserver's ValidateWebhookService does.
func ValidateWebhookService(p *meta.Path, s *ServiceReference) meta.FieldErrors {
	return validateWebhookService(p, s)
}
