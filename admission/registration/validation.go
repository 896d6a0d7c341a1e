package registration

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/cel-go/common/types"

	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/cel/library"
	"github.com/apikit-dev/apikit/meta"
)

// Validation follows kube-apiserver's
// pkg/apis/admissionregistration/validation for the v1 webhook
// configurations, message for message: clients and users match on them.

// acceptedReviewVersions are the AdmissionReview versions a webhook may
// name, as kube-apiserver accepts them (v1beta1 only in the list; the
// dispatcher speaks v1).
var acceptedReviewVersions = []string{"v1", "v1beta1"}

var (
	supportedFailurePolicies      = []string{string(Fail), string(Ignore)}
	supportedMatchPolicies        = []string{string(Equivalent), string(Exact)}
	supportedSideEffectClasses    = []string{string(SideEffectClassNone), string(SideEffectClassNoneOnDryRun), string(SideEffectClassSome), string(SideEffectClassUnknown)}
	noSideEffectClasses           = []string{string(SideEffectClassNone), string(SideEffectClassNoneOnDryRun)}
	supportedOperations           = []string{string(OperationAll), string(Connect), string(Create), string(Delete), string(Update)}
	supportedReinvocationPolicies = []string{string(IfNeededReinvocationPolicy), string(NeverReinvocationPolicy)}
	validScopes                   = []string{string(AllScopes), string(ClusterScope), string(NamespacedScope)}
)

// options are what an update relaxes for webhooks an older server stored.
type options struct {
	requireNoSideEffects      bool
	requireAcceptedVersion    bool
	requireUniqueNames        bool
	ignoreMatchConditions     bool
	allowInvalidSelectorValue bool
}

var createOptions = options{requireNoSideEffects: true, requireAcceptedVersion: true, requireUniqueNames: true}

// webhookFields is what both webhook kinds share, for validation.
type webhookFields struct {
	name                    string
	clientConfig            *WebhookClientConfig
	rules                   []RuleWithOperations
	failurePolicy           *FailurePolicyType
	matchPolicy             *MatchPolicyType
	namespaceSelector       *meta.LabelSelector
	objectSelector          *meta.LabelSelector
	sideEffects             *SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
	reinvocationPolicy      *ReinvocationPolicyType
	matchConditions         []MatchCondition
	mutating                bool
}

func mutatingFields(hs []MutatingWebhook) []webhookFields {
	out := make([]webhookFields, len(hs))
	for i := range hs {
		h := &hs[i]
		out[i] = webhookFields{h.Name, &h.ClientConfig, h.Rules, h.FailurePolicy, h.MatchPolicy, h.NamespaceSelector, h.ObjectSelector,
			h.SideEffects, h.TimeoutSeconds, h.AdmissionReviewVersions, h.ReinvocationPolicy, h.MatchConditions, true}
	}
	return out
}

func validatingFields(hs []ValidatingWebhook) []webhookFields {
	out := make([]webhookFields, len(hs))
	for i := range hs {
		h := &hs[i]
		out[i] = webhookFields{h.Name, &h.ClientConfig, h.Rules, h.FailurePolicy, h.MatchPolicy, h.NamespaceSelector, h.ObjectSelector,
			h.SideEffects, h.TimeoutSeconds, h.AdmissionReviewVersions, nil, h.MatchConditions, false}
	}
	return out
}

// ValidateMutating validates a new MutatingWebhookConfiguration (its
// metadata is the store's).
func ValidateMutating(c *MutatingWebhookConfiguration) meta.FieldErrors {
	return validateWebhooks(mutatingFields(c.Webhooks), createOptions)
}

// ValidateMutatingUpdate validates an update: what the old object already
// had (side effects Some or Unknown, no accepted review version, repeated
// names, unchanged match conditions) stays allowed, as kube-apiserver does.
func ValidateMutatingUpdate(c, old *MutatingWebhookConfiguration) meta.FieldErrors {
	return validateWebhooks(mutatingFields(c.Webhooks), updateOptions(mutatingFields(c.Webhooks), mutatingFields(old.Webhooks)))
}

// ValidateValidating validates a new ValidatingWebhookConfiguration.
func ValidateValidating(c *ValidatingWebhookConfiguration) meta.FieldErrors {
	return validateWebhooks(validatingFields(c.Webhooks), createOptions)
}

// ValidateValidatingUpdate validates an update, as ValidateMutatingUpdate.
func ValidateValidatingUpdate(c, old *ValidatingWebhookConfiguration) meta.FieldErrors {
	return validateWebhooks(validatingFields(c.Webhooks), updateOptions(validatingFields(c.Webhooks), validatingFields(old.Webhooks)))
}

func updateOptions(hooks, old []webhookFields) options {
	o := options{requireNoSideEffects: true, requireAcceptedVersion: true, requireUniqueNames: true}
	names := map[string]bool{}
	for _, h := range old {
		if h.sideEffects == nil || !slices.Contains(noSideEffectClasses, string(*h.sideEffects)) {
			o.requireNoSideEffects = false
		}
		if len(h.admissionReviewVersions) > 0 && !slices.ContainsFunc(h.admissionReviewVersions, func(v string) bool {
			return slices.Contains(acceptedReviewVersions, v)
		}) {
			o.requireAcceptedVersion = false
		}
		if names[h.name] {
			o.requireUniqueNames = false
		}
		names[h.name] = true
		if len(validateLabelSelector(h.namespaceSelector, false, nil))+len(validateLabelSelector(h.objectSelector, false, nil)) > 0 {
			o.allowInvalidSelectorValue = true
		}
	}
	o.ignoreMatchConditions = len(hooks) == len(old)
	for i := range old {
		if o.ignoreMatchConditions && !slices.Equal(hooks[i].matchConditions, old[i].matchConditions) {
			o.ignoreMatchConditions = false
		}
	}
	return o
}

func validateWebhooks(hooks []webhookFields, o options) meta.FieldErrors {
	var errs meta.FieldErrors
	names := map[string]bool{}
	for i, h := range hooks {
		p := meta.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(&h, o, p)...)
		errs = append(errs, validateReviewVersions(h.admissionReviewVersions, o.requireAcceptedVersion, p.Child("admissionReviewVersions"))...)
		if o.requireUniqueNames && h.name != "" {
			if names[h.name] {
				errs = append(errs, meta.Duplicate(p.Child("name"), h.name))
			}
			names[h.name] = true
		}
	}
	return errs
}

func validateWebhook(h *webhookFields, o options, p *meta.Path) meta.FieldErrors {
	errs := fullyQualifiedName(p.Child("name"), h.name)
	for i := range h.rules {
		errs = append(errs, validateRuleWithOperations(&h.rules[i], p.Child("rules").Index(i))...)
	}
	if h.failurePolicy != nil && !slices.Contains(supportedFailurePolicies, string(*h.failurePolicy)) {
		errs = append(errs, meta.NotSupported(p.Child("failurePolicy"), *h.failurePolicy, supportedFailurePolicies))
	}
	if h.matchPolicy != nil && !slices.Contains(supportedMatchPolicies, string(*h.matchPolicy)) {
		errs = append(errs, meta.NotSupported(p.Child("matchPolicy"), *h.matchPolicy, supportedMatchPolicies))
	}
	allowedSideEffects := supportedSideEffectClasses
	if o.requireNoSideEffects {
		allowedSideEffects = noSideEffectClasses
	}
	if h.sideEffects == nil {
		errs = append(errs, meta.Required(p.Child("sideEffects"), "must specify one of "+strings.Join(allowedSideEffects, ", ")))
	} else if !slices.Contains(allowedSideEffects, string(*h.sideEffects)) {
		errs = append(errs, meta.NotSupported(p.Child("sideEffects"), *h.sideEffects, allowedSideEffects))
	}
	if t := h.timeoutSeconds; t != nil && (*t > 30 || *t < 1) {
		errs = append(errs, meta.Invalid(p.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	errs = append(errs, validateLabelSelector(h.namespaceSelector, o.allowInvalidSelectorValue, p.Child("namespaceSelector"))...)
	errs = append(errs, validateLabelSelector(h.objectSelector, o.allowInvalidSelectorValue, p.Child("objectSelector"))...)
	if h.mutating && h.reinvocationPolicy != nil && !slices.Contains(supportedReinvocationPolicies, string(*h.reinvocationPolicy)) {
		errs = append(errs, meta.NotSupported(p.Child("reinvocationPolicy"), *h.reinvocationPolicy, supportedReinvocationPolicies))
	}
	cc := h.clientConfig
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, meta.Required(p.Child("clientConfig"), "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, validateWebhookURL(p.Child("clientConfig", "url"), *cc.URL)...)
	default:
		errs = append(errs, validateWebhookService(p.Child("clientConfig", "service"), cc.Service)...)
	}
	if !o.ignoreMatchConditions {
		errs = append(errs, validateMatchConditions(h.matchConditions, p.Child("matchConditions"))...)
	}
	return errs
}

// fullyQualifiedName is apimachinery's IsFullyQualifiedName.
func fullyQualifiedName(p *meta.Path, name string) meta.FieldErrors {
	if name == "" {
		return meta.FieldErrors{meta.Required(p, "")}
	}
	if msgs := meta.ValidateDNS1123Subdomain(name); len(msgs) > 0 {
		return meta.FieldErrors{meta.Invalid(p, name, strings.Join(msgs, ","))}
	}
	if len(strings.Split(name, ".")) < 3 {
		return meta.FieldErrors{meta.Invalid(p, name, "should be a domain with at least three segments separated by dots")}
	}
	return nil
}

func hasWildcard(s []string) bool { return slices.Contains(s, "*") }

func validateRuleWithOperations(r *RuleWithOperations, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if len(r.Operations) == 0 {
		errs = append(errs, meta.Required(p.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && slices.Contains(r.Operations, OperationAll) {
		errs = append(errs, meta.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !slices.Contains(supportedOperations, string(op)) {
			errs = append(errs, meta.NotSupported(p.Child("operations").Index(i), op, supportedOperations))
		}
	}
	return append(errs, validateRule(&r.Rule, p)...)
}

func validateRule(r *Rule, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if len(r.APIGroups) == 0 {
		errs = append(errs, meta.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && hasWildcard(r.APIGroups) {
		errs = append(errs, meta.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, meta.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && hasWildcard(r.APIVersions) {
		errs = append(errs, meta.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, meta.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateResources(r.Resources, p.Child("resources"))...)
	if r.Scope != nil && !slices.Contains(validScopes, string(*r.Scope)) {
		errs = append(errs, meta.NotSupported(p.Child("scope"), *r.Scope, validScopes))
	}
	return errs
}

func validateResources(resources []string, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if len(resources) == 0 {
		errs = append(errs, meta.Required(p, ""))
	}
	wildSub := map[string]bool{} // x/*
	wildRes := map[string]bool{} // */x
	doubleWild, singleWild, plain := false, false, false
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, meta.Required(p.Index(i), ""))
			continue
		}
		doubleWild = doubleWild || rs == "*/*"
		singleWild = singleWild || rs == "*"
		res, sub, ok := strings.Cut(rs, "/")
		if !ok {
			// kube keeps only the last such entry's verdict.
			plain = rs != "*"
			continue
		}
		if wildSub[res] {
			errs = append(errs, meta.Invalid(p.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if wildRes[sub] {
			errs = append(errs, meta.Invalid(p.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			wildSub[res] = true
		}
		if res == "*" {
			wildRes[sub] = true
		}
	}
	if len(resources) > 1 && doubleWild {
		errs = append(errs, meta.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if singleWild && plain {
		errs = append(errs, meta.Invalid(p, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

func validateReviewVersions(versions []string, requireAccepted bool, p *meta.Path) meta.FieldErrors {
	if len(versions) == 0 {
		return meta.FieldErrors{meta.Required(p, "must specify one of "+strings.Join(acceptedReviewVersions, ", "))}
	}
	var errs meta.FieldErrors
	seen := map[string]bool{}
	accepted := false
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, meta.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range meta.ValidateDNS1035Label(v) {
			errs = append(errs, meta.Invalid(p.Index(i), v, msg))
		}
		accepted = accepted || slices.Contains(acceptedReviewVersions, v)
	}
	if requireAccepted && !accepted {
		errs = append(errs, meta.Invalid(p, versions, "must include at least one of "+strings.Join(acceptedReviewVersions, ", ")))
	}
	return errs
}

const urlForm = "; desired format: https://host[/path]"

// validateWebhookURL is apiserver's ValidateWebhookURL with https forced.
func validateWebhookURL(p *meta.Path, raw string) meta.FieldErrors {
	u, err := url.Parse(raw)
	if err != nil {
		return meta.FieldErrors{meta.Required(p, "url must be a valid URL: "+err.Error()+urlForm)}
	}
	var errs meta.FieldErrors
	if u.Scheme != "https" {
		errs = append(errs, meta.Invalid(p, u.Scheme, "'https' is the only allowed URL scheme"+urlForm))
	}
	if u.Host == "" {
		errs = append(errs, meta.Invalid(p, u.Host, "host must be provided"+urlForm))
	}
	if u.User != nil {
		errs = append(errs, meta.Invalid(p, u.User.String(), "user information is not permitted in the URL"))
	}
	if u.Fragment != "" {
		errs = append(errs, meta.Invalid(p, u.Fragment, "fragments are not permitted in the URL"))
	}
	if u.RawQuery != "" {
		errs = append(errs, meta.Invalid(p, u.RawQuery, "query parameters are not permitted in the URL"))
	}
	return errs
}

// validateWebhookService is apiserver's ValidateWebhookService.
func validateWebhookService(p *meta.Path, s *ServiceReference) meta.FieldErrors {
	var errs meta.FieldErrors
	if s.Name == "" {
		errs = append(errs, meta.Required(p.Child("name"), "service name is required"))
	}
	if s.Namespace == "" {
		errs = append(errs, meta.Required(p.Child("namespace"), "service namespace is required"))
	}
	port := int32(443) // defaulted before validation; a direct caller may not have
	if s.Port != nil {
		port = *s.Port
	}
	if port < 1 || port > 65535 {
		errs = append(errs, meta.Invalid(p.Child("port"), port, "port is not valid: must be between 1 and 65535, inclusive"))
	}
	if s.Path == nil || *s.Path == "" || *s.Path == "/" {
		return errs
	}
	path := *s.Path
	if path == "//" {
		return append(errs, meta.Invalid(p.Child("path"), path, "segment[0] may not be empty"))
	}
	if !strings.HasPrefix(path, "/") {
		errs = append(errs, meta.Invalid(p.Child("path"), path, "must start with a '/'"))
	}
	check := strings.TrimSuffix(path[1:], "/")
	for i, step := range strings.Split(check, "/") {
		if step == "" {
			errs = append(errs, meta.Invalid(p.Child("path"), path, "segment["+strconv.Itoa(i)+"] may not be empty"))
			continue
		}
		for _, msg := range meta.ValidateDNS1123Subdomain(step) {
			errs = append(errs, meta.Invalid(p.Child("path"), path, "segment["+strconv.Itoa(i)+"]: "+msg))
		}
	}
	return errs
}

// maxMatchConditions is kube-apiserver's limit per webhook.
const maxMatchConditions = 64

func validateMatchConditions(mcs []MatchCondition, p *meta.Path) meta.FieldErrors {
	return validateMatchConditionsWith(mcs, p, compileMatchCondition)
}

// validateMatchConditionsWith checks webhooks' and policies' match
// conditions alike; compile reports an expression that does not compile
// in the variables of its owner.
func validateMatchConditionsWith(mcs []MatchCondition, p *meta.Path, compile func(expr string, p *meta.Path) meta.FieldErrors) meta.FieldErrors {
	var errs meta.FieldErrors
	if len(mcs) > maxMatchConditions {
		// apimachinery's field.TooMany.
		errs = append(errs, &meta.FieldError{Type: meta.FieldValueTooMany, Field: p.String(), BadValue: len(mcs),
			Detail: "must have at most " + strconv.Itoa(maxMatchConditions) + " items"})
	}
	names := map[string]bool{}
	for i, mc := range mcs {
		ip := p.Index(i)
		if strings.TrimSpace(mc.Expression) == "" {
			errs = append(errs, meta.Required(ip.Child("expression"), ""))
		} else {
			errs = append(errs, compile(strings.TrimSpace(mc.Expression), ip.Child("expression"))...)
		}
		if mc.Name == "" {
			errs = append(errs, meta.Required(ip.Child("name"), ""))
		} else {
			for _, msg := range meta.ValidateQualifiedName(mc.Name) {
				errs = append(errs, meta.Invalid(ip.Child("name"), mc.Name, msg))
			}
		}
		if mc.Name != "" {
			if names[mc.Name] {
				errs = append(errs, meta.Duplicate(ip.Child("name"), mc.Name))
			}
			names[mc.Name] = true
		}
	}
	return errs
}

var matchConditionCompiler = sync.OnceValues(func() (*cel.Compiler, error) {
	return cel.NewCompiler(
		cel.Variable{Name: cel.ObjectVarName}, cel.Variable{Name: cel.OldObjectVarName}, cel.Variable{Name: cel.RequestVarName},
		cel.Variable{Name: cel.AuthorizerVarName, Type: library.AuthorizerType},
		cel.Variable{Name: cel.RequestResourceVarName, Type: library.ResourceCheckType})
})

// MatchConditionCompiler returns the compiler of webhooks' matchConditions:
// object, oldObject and request, and the authorizer (no params), as
// kube-apiserver declares them.
func MatchConditionCompiler() (*cel.Compiler, error) { return matchConditionCompiler() }

// compileMatchCondition reports an expression that does not compile to a
// bool, with package cel's (kube's) wording.
func compileMatchCondition(expr string, p *meta.Path) meta.FieldErrors {
	c, err := matchConditionCompiler()
	if err != nil {
		return meta.FieldErrors{meta.InternalFieldError(p, err)}
	}
	if _, err := c.Compile(expr, types.BoolType); err != nil {
		var ce *cel.CompileError
		if errors.As(err, &ce) {
			return meta.FieldErrors{meta.Invalid(p, expr, ce.Detail)}
		}
		return meta.FieldErrors{meta.InternalFieldError(p, err)}
	}
	return nil
}

// validateLabelSelector is apimachinery's metav1 ValidateLabelSelector.
func validateLabelSelector(s *meta.LabelSelector, allowInvalidValue bool, p *meta.Path) meta.FieldErrors {
	if s == nil {
		return nil
	}
	var errs meta.FieldErrors
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ml := p.Child("matchLabels")
	for _, k := range keys {
		errs = append(errs, labelName(k, ml)...)
		for _, msg := range meta.ValidateLabelValue(s.MatchLabels[k]) {
			errs = append(errs, meta.Invalid(ml, s.MatchLabels[k], msg))
		}
	}
	for i, e := range s.MatchExpressions {
		ep := p.Child("matchExpressions").Index(i)
		switch e.Operator {
		case meta.LabelSelectorOpIn, meta.LabelSelectorOpNotIn:
			if len(e.Values) == 0 {
				errs = append(errs, meta.Required(ep.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case meta.LabelSelectorOpExists, meta.LabelSelectorOpDoesNotExist:
			if len(e.Values) > 0 {
				errs = append(errs, meta.Forbidden(ep.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		default:
			errs = append(errs, meta.Invalid(ep.Child("operator"), e.Operator, "not a valid selector operator"))
		}
		errs = append(errs, labelName(e.Key, ep.Child("key"))...)
		if !allowInvalidValue {
			for j, v := range e.Values {
				for _, msg := range meta.ValidateLabelValue(v) {
					errs = append(errs, meta.Invalid(ep.Child("values").Index(j), v, msg))
				}
			}
		}
	}
	return errs
}

func labelName(k string, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	for _, msg := range meta.ValidateQualifiedName(k) {
		errs = append(errs, meta.Invalid(p, k, msg))
	}
	return errs
}
