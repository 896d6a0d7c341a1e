package cel

import "github.com/apikit-dev/apikit/schema"

// ruleValue is a rule as kube-apiserver prints it in a field error: its
// internal apiextensions.ValidationRule as JSON, with Go's field names
// (the internal type has no JSON tags), e.g.
// {"Rule":"self == true","Message":"",...,"Reason":null,...}.
type ruleValue struct {
	Rule              string
	Message           string
	MessageExpression string
	Reason            *string
	FieldPath         string
	OptionalOldSelf   *bool
}

func newRuleValue(r schema.ValidationRule) ruleValue {
	v := ruleValue{Rule: r.Rule, Message: r.Message, MessageExpression: r.MessageExpression,
		FieldPath: r.FieldPath, OptionalOldSelf: r.OptionalOldSelf}
	if r.Reason != "" {
		reason := r.Reason
		v.Reason = &reason
	}
	return v
}
