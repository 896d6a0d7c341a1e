package storage

import (
	"testing"

	"github.com/apikit-dev/apikit/meta"
)

type otherAttrs struct{}

// TestPredicateAttrsKey: predicates whose GetAttrs name the same value's
// fields differently (core/v1 and events.k8s.io/v1 events over one
// storage) each match on their own attributes, though the value's memo
// keeps both; predicates with the same key share what the first decoded.
func TestPredicateAttrsKey(t *testing.T) {
	selector := func(s string) meta.Selector {
		sel, err := meta.ParseFieldSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		return sel
	}
	decodes := map[string]int{}
	attrs := func(name string, fields meta.Set) AttrFunc {
		return func([]byte) (meta.Set, meta.Set, error) {
			decodes[name]++
			return nil, fields, nil
		}
	}
	core := attrs("core", meta.Set{"involvedObject.name": "p"})
	v1 := attrs("v1", meta.Set{"regarding.name": "p"})
	var v1Key any = otherAttrs{}
	memo := NewMemo()
	tests := []struct {
		name string
		p    Predicate
		want bool
	}{
		{"core first", Predicate{Field: selector("involvedObject.name=p"), GetAttrs: core}, true},
		{"events.k8s.io with its own key", Predicate{Field: selector("regarding.name=p"), GetAttrs: v1, AttrsKey: v1Key}, true},
		{"core again, memoized", Predicate{Field: selector("involvedObject.name=q"), GetAttrs: core}, false},
		{"events.k8s.io again, memoized", Predicate{Field: selector("regarding.name!=p"), GetAttrs: v1, AttrsKey: v1Key}, false},
	}
	for _, tt := range tests {
		got, err := tt.p.Matches([]byte("{}"), memo)
		if err != nil || got != tt.want {
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.want)
		}
		if match, known := tt.p.MatchesMemoized(memo); !known || match != tt.want {
			t.Errorf("%s memoized: %v (known %v), want %v", tt.name, match, known, tt.want)
		}
	}
	if decodes["core"] != 1 || decodes["v1"] != 1 {
		t.Errorf("decodes %v, want one each", decodes)
	}
}
