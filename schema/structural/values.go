package structural

import (
	"encoding/json"
	"math"
	"sort"
)

// normalize returns a copy of a schema value (a default or an enum value,
// decoded by encoding/json with every number a float64) in DecodeJSON's
// convention: integral numbers become int64, as Kubernetes decodes a
// CRD's defaults. (A default written 1.0 is an int64 here and a float64 in
// kube-apiserver; both are the same JSON number to a client.)
func normalize(v any) any {
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && t >= -(1<<63) && t < 1<<63 {
			return int64(t)
		}
		return t
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

// deepEqual compares two values of DecodeJSON's convention.
func deepEqual(a, b any) bool {
	switch at := a.(type) {
	case map[string]any:
		bt, ok := b.(map[string]any)
		if !ok || len(at) != len(bt) {
			return false
		}
		for k, av := range at {
			bv, ok := bt[k]
			if !ok || !deepEqual(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bt, ok := b.([]any)
		if !ok || len(at) != len(bt) {
			return false
		}
		for i := range at {
			if !deepEqual(at[i], bt[i]) {
				return false
			}
		}
		return true
	case nil:
		return b == nil
	case string, bool, int64, float64:
		return a == b
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortStrings(s []string) { sort.Strings(s) }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
