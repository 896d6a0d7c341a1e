package flowcontrol

import (
	"math"
	"strconv"
	"strings"

	"github.com/apikit-dev/apikit/meta"
)

// Defaults of the v1 API, as Kubernetes has them.
const (
	DefaultMatchingPrecedence       = 1000
	DefaultNominalConcurrencyShares = 30
	DefaultQueues                   = 64
	DefaultHandSize                 = 8
	DefaultQueueLengthLimit         = 50
	// MaxMatchingPrecedence is the largest matchingPrecedence allowed.
	MaxMatchingPrecedence = 10000
)

func int32Ptr(v int32) *int32 { return &v }

// SetFlowSchemaDefaults fills what a FlowSchema may leave out.
func SetFlowSchemaDefaults(fs *FlowSchema) {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = DefaultMatchingPrecedence
	}
}

// SetPriorityLevelDefaults fills what a PriorityLevelConfiguration may
// leave out.
func SetPriorityLevelDefaults(pl *PriorityLevelConfiguration) {
	switch pl.Spec.Type {
	case PriorityLevelEnablementExempt:
		if pl.Spec.Exempt == nil {
			pl.Spec.Exempt = &ExemptPriorityLevelConfiguration{}
		}
		if pl.Spec.Exempt.NominalConcurrencyShares == nil {
			pl.Spec.Exempt.NominalConcurrencyShares = int32Ptr(0)
		}
		if pl.Spec.Exempt.LendablePercent == nil {
			pl.Spec.Exempt.LendablePercent = int32Ptr(0)
		}
	case PriorityLevelEnablementLimited:
		l := pl.Spec.Limited
		if l == nil {
			return
		}
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = int32Ptr(DefaultNominalConcurrencyShares)
		}
		if l.LendablePercent == nil {
			l.LendablePercent = int32Ptr(0)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			if q.Queues == 0 {
				q.Queues = DefaultQueues
			}
			if q.HandSize == 0 {
				q.HandSize = DefaultHandSize
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = DefaultQueueLengthLimit
			}
		}
	}
}

var distinguisherMethods = []string{string(FlowDistinguisherMethodByNamespace), string(FlowDistinguisherMethodByUser)}

// ValidateFlowSchema checks a FlowSchema's spec.
func ValidateFlowSchema(fs *FlowSchema) meta.FieldErrors {
	var errs meta.FieldErrors
	spec := meta.NewPath("spec")
	if p := fs.Spec.MatchingPrecedence; p <= 0 {
		errs = append(errs, meta.Invalid(spec.Child("matchingPrecedence"), p, "must be a positive value"))
	} else if p > MaxMatchingPrecedence {
		errs = append(errs, meta.Invalid(spec.Child("matchingPrecedence"), p, "must not be greater than 10000"))
	}
	if dm := fs.Spec.DistinguisherMethod; dm != nil &&
		dm.Type != FlowDistinguisherMethodByUser && dm.Type != FlowDistinguisherMethodByNamespace {
		errs = append(errs, meta.NotSupported(spec.Child("distinguisherMethod", "type"), dm.Type, distinguisherMethods))
	}
	plName := spec.Child("priorityLevelConfiguration", "name")
	if fs.Spec.PriorityLevelConfiguration.Name == "" {
		errs = append(errs, meta.Required(plName, "must reference a priority level"))
	} else {
		// kube-apiserver's ValidatePriorityLevelConfigurationName: the
		// level's own names are DNS subdomains (the registry's default).
		for _, msg := range meta.ValidateDNS1123Subdomain(fs.Spec.PriorityLevelConfiguration.Name) {
			errs = append(errs, meta.Invalid(plName, fs.Spec.PriorityLevelConfiguration.Name, msg))
		}
	}
	for i, rule := range fs.Spec.Rules {
		errs = append(errs, validateRules(rule, spec.Child("rules").Index(i))...)
	}
	return errs
}

func validateRules(rule PolicyRulesWithSubjects, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if len(rule.Subjects) == 0 {
		errs = append(errs, meta.Required(p.Child("subjects"), "subjects must contain at least one value"))
	}
	for i, s := range rule.Subjects {
		errs = append(errs, validateSubject(s, p.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, meta.Required(p, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i, r := range rule.ResourceRules {
		rp := p.Child("resourceRules").Index(i)
		errs = append(errs, validateWildcardList(r.Verbs, rp.Child("verbs"), VerbAll, "verbs")...)
		errs = append(errs, validateWildcardList(r.APIGroups, rp.Child("apiGroups"), APIGroupAll, "resource rules must supply at least one api group")...)
		errs = append(errs, validateWildcardList(r.Resources, rp.Child("resources"), ResourceAll, "resource rules must supply at least one resource")...)
		if len(r.Namespaces) == 0 && !r.ClusterScope {
			errs = append(errs, meta.Required(rp.Child("namespaces"), "resource rules that are not cluster scoped must supply at least one namespace"))
		} else if len(r.Namespaces) > 1 && containsString(r.Namespaces, NamespaceEvery) {
			errs = append(errs, meta.Invalid(rp.Child("namespaces"), r.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	}
	for i, r := range rule.NonResourceRules {
		np := p.Child("nonResourceRules").Index(i)
		errs = append(errs, validateWildcardList(r.Verbs, np.Child("verbs"), VerbAll, "verbs")...)
		errs = append(errs, validateWildcardList(r.NonResourceURLs, np.Child("nonResourceURLs"), NonResourceAll, "nonResourceURLs")...)
		for j, u := range r.NonResourceURLs {
			if u != NonResourceAll && !strings.HasPrefix(u, "/") {
				errs = append(errs, meta.Invalid(np.Child("nonResourceURLs").Index(j), u, "must start with slash"))
			}
		}
	}
	return errs
}

// validateWildcardList requires a non-empty list in which the wildcard, if
// present, stands alone.
func validateWildcardList(list []string, p *meta.Path, wildcard, what string) meta.FieldErrors {
	if len(list) == 0 {
		if !strings.Contains(what, " ") {
			what = what + " must contain at least one value"
		}
		return meta.FieldErrors{meta.Required(p, what)}
	}
	if len(list) > 1 && containsString(list, wildcard) {
		return meta.FieldErrors{meta.Invalid(p, list, "if '"+wildcard+"' is present, must not specify other values")}
	}
	return nil
}

func validateSubject(s Subject, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	switch s.Kind {
	case SubjectKindUser:
		if s.User == nil || s.User.Name == "" {
			errs = append(errs, meta.Required(p.Child("user"), "user is required when subject kind is 'User'"))
		}
	case SubjectKindGroup:
		if s.Group == nil || s.Group.Name == "" {
			errs = append(errs, meta.Required(p.Child("group"), "group is required when subject kind is 'Group'"))
		}
	case SubjectKindServiceAccount:
		if s.ServiceAccount == nil || s.ServiceAccount.Name == "" || s.ServiceAccount.Namespace == "" {
			errs = append(errs, meta.Required(p.Child("serviceAccount"), "serviceAccount (namespace and name) is required when subject kind is 'ServiceAccount'"))
		}
	default:
		errs = append(errs, meta.NotSupported(p.Child("kind"), s.Kind,
			[]string{string(SubjectKindGroup), string(SubjectKindServiceAccount), string(SubjectKindUser)}))
	}
	return errs
}

// ValidatePriorityLevel checks a PriorityLevelConfiguration's spec.
func ValidatePriorityLevel(pl *PriorityLevelConfiguration) meta.FieldErrors {
	var errs meta.FieldErrors
	spec := meta.NewPath("spec")
	switch pl.Spec.Type {
	case PriorityLevelEnablementExempt:
		if pl.Name != PriorityLevelExempt {
			errs = append(errs, meta.Invalid(spec.Child("type"), pl.Spec.Type, "only the priority level named 'exempt' may be exempt"))
		}
		if pl.Spec.Limited != nil {
			errs = append(errs, meta.Forbidden(spec.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := pl.Spec.Exempt; e != nil {
			errs = append(errs, validateShares(e.NominalConcurrencyShares, e.LendablePercent, spec.Child("exempt"))...)
		}
	case PriorityLevelEnablementLimited:
		if pl.Name == PriorityLevelExempt {
			errs = append(errs, meta.Invalid(spec.Child("type"), pl.Spec.Type, "the priority level named 'exempt' must be exempt"))
		}
		if pl.Spec.Exempt != nil {
			errs = append(errs, meta.Forbidden(spec.Child("exempt"), "must be nil if the type is Limited"))
		}
		l := pl.Spec.Limited
		if l == nil {
			errs = append(errs, meta.Required(spec.Child("limited"), "must not be empty when type is Limited"))
			break
		}
		lp := spec.Child("limited")
		errs = append(errs, validateShares(l.NominalConcurrencyShares, l.LendablePercent, lp)...)
		if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
			errs = append(errs, meta.Invalid(lp.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
		}
		errs = append(errs, validateLimitResponse(l.LimitResponse, lp.Child("limitResponse"))...)
	default:
		errs = append(errs, meta.NotSupported(spec.Child("type"), pl.Spec.Type,
			[]string{string(PriorityLevelEnablementExempt), string(PriorityLevelEnablementLimited)}))
	}
	return errs
}

func validateShares(shares, lendable *int32, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if shares != nil && *shares < 0 {
		errs = append(errs, meta.Invalid(p.Child("nominalConcurrencyShares"), *shares, "must be a non-negative integer"))
	}
	if lendable != nil && (*lendable < 0 || *lendable > 100) {
		errs = append(errs, meta.Invalid(p.Child("lendablePercent"), *lendable, "must be between 0 and 100, inclusive"))
	}
	return errs
}

func validateLimitResponse(lr LimitResponse, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	switch lr.Type {
	case LimitResponseTypeReject:
		if lr.Queuing != nil {
			errs = append(errs, meta.Forbidden(p.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited"))
		}
	case LimitResponseTypeQueue:
		q := lr.Queuing
		if q == nil {
			errs = append(errs, meta.Required(p.Child("queuing"), "must not be empty if limited.limitResponse.type is Queue"))
			break
		}
		qp := p.Child("queuing")
		if q.QueueLengthLimit <= 0 {
			errs = append(errs, meta.Invalid(qp.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
		}
		if q.Queues <= 0 {
			errs = append(errs, meta.Invalid(qp.Child("queues"), q.Queues, "must be positive"))
		}
		if q.HandSize <= 0 {
			errs = append(errs, meta.Invalid(qp.Child("handSize"), q.HandSize, "must be positive"))
		} else if q.HandSize > q.Queues {
			errs = append(errs, meta.Invalid(qp.Child("handSize"), q.HandSize, "should not be greater than queues ("+strconv.Itoa(int(q.Queues))+")"))
		} else if q.Queues > 0 && entropyBits(int(q.Queues), int(q.HandSize)) > maxHashBits {
			errs = append(errs, meta.Invalid(qp.Child("handSize"), q.HandSize,
				"required entropy bits of deckSize "+strconv.Itoa(int(q.Queues))+" and handSize "+strconv.Itoa(int(q.HandSize))+" should not be greater than 60"))
		}
	default:
		errs = append(errs, meta.NotSupported(p.Child("type"), lr.Type,
			[]string{string(LimitResponseTypeQueue), string(LimitResponseTypeReject)}))
	}
	return errs
}

// maxHashBits is how much of a flow's 64-bit hash shuffle sharding may use.
const maxHashBits = 60

// entropyBits is the number of hash bits dealing a hand needs, as
// Kubernetes' shuffle-sharding validation counts them.
func entropyBits(deckSize, handSize int) int {
	return int(math.Ceil(math.Log2(float64(deckSize)) * float64(handSize)))
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
