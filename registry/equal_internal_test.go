package registry

import (
	"reflect"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
)

func TestSemanticEqual(t *testing.T) {
	type inner struct {
		N    int
		hide []string
	}
	type spec struct {
		S     []string
		M     map[string]int
		B     []byte
		P     *inner
		I     any
		T     meta.Time
		Arr   [2]inner
		F     float64
		inner inner
	}
	now := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		a, b spec
		want bool
	}{
		{"zero", spec{}, spec{}, true},
		{"nil and empty slice", spec{S: nil}, spec{S: []string{}}, true},
		{"nil and empty map", spec{M: nil}, spec{M: map[string]int{}}, true},
		{"nil and empty bytes", spec{B: nil}, spec{B: []byte{}}, true},
		{"different bytes", spec{B: []byte("a")}, spec{B: []byte("b")}, false},
		{"slice element", spec{S: []string{"a"}}, spec{S: []string{"b"}}, false},
		{"slice length", spec{S: []string{"a"}}, spec{S: []string{"a", "a"}}, false},
		{"map value", spec{M: map[string]int{"a": 1}}, spec{M: map[string]int{"a": 2}}, false},
		{"map key", spec{M: map[string]int{"a": 1}}, spec{M: map[string]int{"b": 1}}, false},
		{"nil and set pointer", spec{P: nil}, spec{P: &inner{}}, false},
		{"pointers to equal values", spec{P: &inner{N: 1}}, spec{P: &inner{N: 1}}, true},
		{"nested empty slice", spec{P: &inner{hide: nil}}, spec{P: &inner{hide: []string{}}}, true},
		{"interfaces of different types", spec{I: 1}, spec{I: "1"}, false},
		{"interfaces of equal values", spec{I: []any{}}, spec{I: []any(nil)}, true},
		{"times across zones", spec{T: meta.NewTime(now)}, spec{T: meta.NewTime(now.In(time.FixedZone("x", 7200)))}, true},
		{"different times", spec{T: meta.NewTime(now)}, spec{T: meta.NewTime(now.Add(time.Second))}, false},
		{"array element", spec{Arr: [2]inner{{N: 1}}}, spec{Arr: [2]inner{{N: 2}}}, false},
		{"float", spec{F: 1.5}, spec{F: 1.5}, true},
		{"unexported field", spec{inner: inner{N: 1}}, spec{inner: inner{N: 2}}, false},
	} {
		if got := semanticEqual(reflect.ValueOf(tc.a), reflect.ValueOf(tc.b)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if got := semanticEqual(reflect.ValueOf(tc.b), reflect.ValueOf(tc.a)); got != tc.want {
			t.Errorf("%s (swapped): %v, want %v", tc.name, got, tc.want)
		}
	}
}
