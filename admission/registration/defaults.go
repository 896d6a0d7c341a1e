package registration

import "github.com/apikit-dev/apikit/meta"

// DefaultTimeoutSeconds is a webhook's timeout when it names none.
const DefaultTimeoutSeconds int32 = 10

// SetMutatingDefaults fills what kube-apiserver's v1 defaulting fills.
func SetMutatingDefaults(c *MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		h := &c.Webhooks[i]
		setCommonDefaults(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds, &h.ClientConfig, h.Rules)
		if h.ReinvocationPolicy == nil {
			h.ReinvocationPolicy = ptr(NeverReinvocationPolicy)
		}
	}
}

// SetValidatingDefaults fills what kube-apiserver's v1 defaulting fills.
func SetValidatingDefaults(c *ValidatingWebhookConfiguration) {
	for i := range c.Webhooks {
		h := &c.Webhooks[i]
		setCommonDefaults(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds, &h.ClientConfig, h.Rules)
	}
}

func setCommonDefaults(fp **FailurePolicyType, mp **MatchPolicyType, ns, obj **meta.LabelSelector, timeout **int32, cc *WebhookClientConfig, rules []RuleWithOperations) {
	if *fp == nil {
		*fp = ptr(Fail)
	}
	if *mp == nil {
		*mp = ptr(Equivalent)
	}
	if *ns == nil {
		*ns = &meta.LabelSelector{}
	}
	if *obj == nil {
		*obj = &meta.LabelSelector{}
	}
	if *timeout == nil {
		*timeout = ptr(DefaultTimeoutSeconds)
	}
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptr(int32(443))
	}
	for i := range rules {
		if rules[i].Scope == nil {
			rules[i].Scope = ptr(AllScopes)
		}
	}
}

func ptr[T any](v T) *T { return &v }
