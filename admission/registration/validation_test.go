package registration

import (
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
)

// validHook returns a webhook that passes validation, for cases to break.
func validHook() ValidatingWebhook {
	none := SideEffectClassNone
	return ValidatingWebhook{
		Name:                    "deny.example.com",
		ClientConfig:            WebhookClientConfig{URL: ptr("https://127.0.0.1:9443/deny")},
		Rules:                   []RuleWithOperations{{Operations: []OperationType{Create}, Rule: Rule{APIGroups: []string{"wardle.example.com"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"flunders"}}}},
		SideEffects:             &none,
		AdmissionReviewVersions: []string{"v1"},
	}
}

// TestValidateMessages holds validation to kube-apiserver's messages and
// field paths.
func TestValidateMessages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*ValidatingWebhookConfiguration)
		want   []string
	}{{
		name:   "valid",
		change: func(*ValidatingWebhookConfiguration) {},
	}, {
		name: "names unique and fully qualified",
		change: func(c *ValidatingWebhookConfiguration) {
			c.Webhooks = append(c.Webhooks, validHook(), validHook())
			c.Webhooks[2].Name = "short"
		},
		want: []string{
			`webhooks[1].name: Duplicate value: "deny.example.com"`,
			`webhooks[2].name: Invalid value: "short": should be a domain with at least three segments separated by dots`,
		},
	}, {
		name: "url xor service",
		change: func(c *ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.Service = &ServiceReference{Namespace: "ns", Name: "svc"}
		},
		want: []string{`webhooks[0].clientConfig: Required value: exactly one of url or service is required`},
	}, {
		name: "https only",
		change: func(c *ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.URL = ptr("http://127.0.0.1/x?a=b")
		},
		want: []string{
			`webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`,
			`webhooks[0].clientConfig.url: Invalid value: "a=b": query parameters are not permitted in the URL`,
		},
	}, {
		name: "service fields",
		change: func(c *ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig = WebhookClientConfig{Service: &ServiceReference{Port: ptr(int32(0)), Path: ptr("/a//b")}}
		},
		want: []string{
			`webhooks[0].clientConfig.service.name: Required value: service name is required`,
			`webhooks[0].clientConfig.service.namespace: Required value: service namespace is required`,
			`webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive`,
			`webhooks[0].clientConfig.service.path: Invalid value: "/a//b": segment[1] may not be empty`,
		},
	}, {
		name: "sideEffects required, Some refused on create",
		change: func(c *ValidatingWebhookConfiguration) {
			c.Webhooks = append(c.Webhooks, validHook())
			c.Webhooks[0].SideEffects = nil
			c.Webhooks[1].Name = "two.example.com"
			c.Webhooks[1].SideEffects = ptr(SideEffectClassSome)
		},
		want: []string{
			`webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun`,
			`webhooks[1].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`,
		},
	}, {
		name: "admissionReviewVersions must include v1",
		change: func(c *ValidatingWebhookConfiguration) {
			c.Webhooks[0].AdmissionReviewVersions = []string{"v2"}
		},
		want: []string{`webhooks[0].admissionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1`},
	}, {
		name: "admissionReviewVersions required",
		change: func(c *ValidatingWebhookConfiguration) {
			c.Webhooks[0].AdmissionReviewVersions = nil
		},
		want: []string{`webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1`},
	}, {
		name: "timeoutSeconds 1..30, policies",
		change: func(c *ValidatingWebhookConfiguration) {
			c.Webhooks[0].TimeoutSeconds = ptr(int32(31))
			c.Webhooks[0].FailurePolicy = ptr(FailurePolicyType("Sometimes"))
			c.Webhooks[0].MatchPolicy = ptr(MatchPolicyType("Close"))
		},
		want: []string{
			`webhooks[0].failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore"`,
			`webhooks[0].matchPolicy: Unsupported value: "Close": supported values: "Equivalent", "Exact"`,
			`webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds`,
		},
	}, {
		name: "rules",
		change: func(c *ValidatingWebhookConfiguration) {
			c.Webhooks[0].Rules = []RuleWithOperations{{
				Operations: []OperationType{"*", "PATCH"},
				Rule:       Rule{APIGroups: []string{"*", "a"}, Resources: []string{"*/*", "x"}, Scope: ptr(ScopeType("Global"))},
			}}
		},
		want: []string{
			`webhooks[0].rules[0].operations: Invalid value: ["*","PATCH"]: if '*' is present, must not specify other operations`,
			`webhooks[0].rules[0].operations[1]: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"`,
			`webhooks[0].rules[0].apiGroups: Invalid value: ["*","a"]: if '*' is present, must not specify other API groups`,
			`webhooks[0].rules[0].apiVersions: Required value`,
			`webhooks[0].rules[0].resources: Invalid value: ["*/*","x"]: if '*/*' is present, must not specify other resources`,
			`webhooks[0].rules[0].scope: Unsupported value: "Global": supported values: "*", "Cluster", "Namespaced"`,
		},
	}, {
		name: "selectors and match conditions",
		change: func(c *ValidatingWebhookConfiguration) {
			c.Webhooks[0].ObjectSelector = &meta.LabelSelector{MatchExpressions: []meta.LabelSelectorRequirement{{Key: "a", Operator: "In"}}}
			c.Webhooks[0].MatchConditions = []MatchCondition{{Name: "x", Expression: "true"}, {Name: "x", Expression: " "}}
		},
		want: []string{
			"webhooks[0].objectSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
			`webhooks[0].matchConditions[1].expression: Required value`,
			`webhooks[0].matchConditions[1].name: Duplicate value: "x"`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := &ValidatingWebhookConfiguration{Webhooks: []ValidatingWebhook{validHook()}}
			tc.change(c)
			SetValidatingDefaults(c)
			var got []string
			for _, e := range ValidateValidating(c) {
				got = append(got, e.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// TestValidateUpdateKeepsWhatWasStored: an update may keep side effects
// Some that an older server stored, as kube-apiserver allows; a create
// may not.
func TestValidateUpdateKeepsWhatWasStored(t *testing.T) {
	h := validHook()
	h.SideEffects = ptr(SideEffectClassSome)
	old := &MutatingWebhookConfiguration{Webhooks: []MutatingWebhook{{Name: h.Name, ClientConfig: h.ClientConfig, Rules: h.Rules,
		SideEffects: h.SideEffects, AdmissionReviewVersions: h.AdmissionReviewVersions}}}
	SetMutatingDefaults(old)
	if errs := ValidateMutating(old); len(errs) != 1 {
		t.Errorf("create: %v, want the sideEffects refusal", errs)
	}
	updated := &MutatingWebhookConfiguration{Webhooks: slices.Clone(old.Webhooks)}
	updated.Webhooks[0].TimeoutSeconds = ptr(int32(5))
	if errs := ValidateMutatingUpdate(updated, old); len(errs) != 0 {
		t.Errorf("update: %v", errs)
	}
	updated.Webhooks[0].ReinvocationPolicy = ptr(ReinvocationPolicyType("Always"))
	if errs := ValidateMutatingUpdate(updated, old); len(errs) != 1 || !strings.Contains(errs[0].Error(), `webhooks[0].reinvocationPolicy: Unsupported value: "Always"`) {
		t.Errorf("update: %v", errs)
	}
}

func TestDefaults(t *testing.T) {
	c := &MutatingWebhookConfiguration{Webhooks: []MutatingWebhook{{Name: "a.b.c", Rules: []RuleWithOperations{{}},
		ClientConfig: WebhookClientConfig{Service: &ServiceReference{Name: "s", Namespace: "n"}}}}}
	SetMutatingDefaults(c)
	h := c.Webhooks[0]
	if *h.FailurePolicy != Fail || *h.MatchPolicy != Equivalent || *h.TimeoutSeconds != 10 || *h.ReinvocationPolicy != NeverReinvocationPolicy ||
		h.NamespaceSelector == nil || h.ObjectSelector == nil || *h.Rules[0].Scope != AllScopes || *h.ClientConfig.Service.Port != 443 {
		t.Errorf("defaults: %+v", h)
	}
}

func TestReviewVersionNames(t *testing.T) {
	c := &ValidatingWebhookConfiguration{Webhooks: []ValidatingWebhook{validHook()}}
	c.Webhooks[0].AdmissionReviewVersions = []string{"v1", "V2", "v1"}
	SetValidatingDefaults(c)
	errs := ValidateValidating(c)
	if len(errs) != 2 || !strings.HasPrefix(errs[0].Error(), `webhooks[0].admissionReviewVersions[1]: Invalid value: "V2": a DNS-1035 label`) ||
		errs[1].Error() != `webhooks[0].admissionReviewVersions[2]: Invalid value: "v1": duplicate version` {
		t.Errorf("errors %v", errs)
	}
}

func TestMatchConditionExpressions(t *testing.T) {
	c := &ValidatingWebhookConfiguration{Webhooks: []ValidatingWebhook{validHook()}}
	c.Webhooks[0].MatchConditions = []MatchCondition{
		{Name: "ok", Expression: "object.metadata.name != 'x' && request.operation == 'CREATE'"},
		{Name: "undeclared", Expression: "params.x == 1"},
		{Name: "not-bool", Expression: "'a'"},
	}
	SetValidatingDefaults(c)
	errs := ValidateValidating(c)
	if len(errs) != 2 ||
		!strings.HasPrefix(errs[0].Error(), `webhooks[0].matchConditions[1].expression: Invalid value: "params.x == 1": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params'`) ||
		!strings.HasPrefix(errs[1].Error(), `webhooks[0].matchConditions[2].expression: Invalid value: "'a'": must evaluate to bool`) {
		t.Errorf("errors:\n%v", errs)
	}
}
