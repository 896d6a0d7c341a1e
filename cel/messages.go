package cel

import (
	"errors"
	"fmt"

	"github.com/apikit-dev/apikit/schema"
)

// ruleValue prints a rule in a field error as kube-apiserver does: the Go
// syntax of its internal apiextensions.ValidationRule, e.g.
// apiextensions.ValidationRule{Rule:"self == true", Message:"", ...}.
// meta.FieldError prints values as JSON when it can, so the JSON form is
// refused to reach String.
type ruleValue schema.ValidationRule

func (r ruleValue) String() string {
	reason := "(*apiextensions.FieldValueErrorReason)(nil)"
	if r.Reason != "" {
		reason = fmt.Sprintf("(*apiextensions.FieldValueErrorReason)(%p)", &r.Reason)
	}
	optional := "(*bool)(nil)"
	if r.OptionalOldSelf != nil {
		optional = fmt.Sprintf("(*bool)(%p)", r.OptionalOldSelf)
	}
	return fmt.Sprintf("apiextensions.ValidationRule{Rule:%q, Message:%q, MessageExpression:%q, Reason:%s, FieldPath:%q, OptionalOldSelf:%s}",
		r.Rule, r.Message, r.MessageExpression, reason, r.FieldPath, optional)
}

var errGoSyntax = errors.New("printed in Go syntax, as kube prints it")

// MarshalJSON refuses, so that field errors print String instead.
func (r ruleValue) MarshalJSON() ([]byte, error) { return nil, errGoSyntax }
