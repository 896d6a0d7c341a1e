package meta

import (
	"fmt"
	"slices"
)

// LabelSelector is the structured label selector that API objects embed
// (a Deployment's spec.selector, for instance). The requirements of
// MatchLabels and MatchExpressions all must hold.
//
// A nil *LabelSelector selects nothing, and an empty one everything: see
// AsSelector.
type LabelSelector struct {
	// MatchLabels requires each key to have its value, like "key=value".
	MatchLabels map[string]string `json:"matchLabels,omitempty" protobuf:"1"`
	// MatchExpressions are set-based requirements.
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty" protobuf:"2"`
}

// LabelSelectorRequirement is one set-based requirement of a LabelSelector.
type LabelSelectorRequirement struct {
	Key      string                `json:"key" protobuf:"1"`
	Operator LabelSelectorOperator `json:"operator" protobuf:"2"`
	// Values must be non-empty for In and NotIn, and empty for Exists and
	// DoesNotExist.
	Values []string `json:"values,omitempty" protobuf:"3"`
}

// LabelSelectorOperator relates a requirement's key to its values.
type LabelSelectorOperator string

// The operators of LabelSelectorRequirement.
const (
	LabelSelectorOpIn           LabelSelectorOperator = "In"
	LabelSelectorOpNotIn        LabelSelectorOperator = "NotIn"
	LabelSelectorOpExists       LabelSelectorOperator = "Exists"
	LabelSelectorOpDoesNotExist LabelSelectorOperator = "DoesNotExist"
)

// AsSelector converts ls to a Selector with the semantics of Kubernetes'
// LabelSelectorAsSelector: a nil ls gives Nothing (it selects no object),
// an ls with neither MatchLabels nor MatchExpressions gives Everything, and
// otherwise every key and value is validated and the requirements are
// sorted by key (MatchLabels, in key order, before MatchExpressions of the
// same key). Errors carry Kubernetes' field paths and messages, e.g.
//
//	values[0][app]: Invalid value: "-web": a valid label must be ...
//
// ls is not modified. Unlike Kubernetes, repeated values of one expression
// are kept once, so that String parses back to an equal selector.
func (ls *LabelSelector) AsSelector() (Selector, error) {
	if ls == nil {
		return Nothing(), nil
	}
	if len(ls.MatchLabels)+len(ls.MatchExpressions) == 0 {
		return Everything(), nil
	}
	reqs := make([]labelRequirement, 0, len(ls.MatchLabels)+len(ls.MatchExpressions))
	keys := make([]string, 0, len(ls.MatchLabels))
	for k := range ls.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		r, err := newLabelRequirement(k, labelEquals, []string{ls.MatchLabels[k]}, false)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, r)
	}
	for _, e := range ls.MatchExpressions {
		var op labelOp
		switch e.Operator {
		case LabelSelectorOpIn:
			op = labelIn
		case LabelSelectorOpNotIn:
			op = labelNotIn
		case LabelSelectorOpExists:
			op = labelExists
		case LabelSelectorOpDoesNotExist:
			op = labelDoesNotExist
		default:
			return nil, fmt.Errorf("%q is not a valid label selector operator", e.Operator)
		}
		// A copy, because newLabelRequirement sorts the values in place.
		r, err := newLabelRequirement(e.Key, op, append([]string(nil), e.Values...), false)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, r)
	}
	return newLabelSelector(reqs), nil
}
