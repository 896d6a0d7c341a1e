// Package celfuzz makes inputs for the fuzz tests of CEL rule ratcheting:
// the cel package's own and the differential one against kube's validator
// (e2e/celdiff), which are in different modules and share this.
package celfuzz

import "strings"

// RatchetPair makes, from a fuzzer's bytes, an object {"spec": {...}}
// and an old version of it that shares most of its values (a random pair
// of JSON documents would rarely share any): each byte picks a field's
// value, and a later byte whether and how the old object differs there.
// The fields are those of a ratcheting fuzz schema: n (an integer), m (a
// map list keyed by k, with an integer v), s (a set of strings), a (a list
// of integers), am (an atomic map of integers x and y), ap (a map of
// integers) and u (an object with x, and now and then an undeclared
// field "extra").
func RatchetPair(data []byte) (obj, old map[string]any) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	keys := []string{"a", "b", "c"}
	value := func(field string) any {
		n := next()
		switch field {
		case "n":
			return int64(n % 10)
		case "m":
			l := []any{}
			for i := range n % 4 {
				item := map[string]any{"k": keys[(n/4+i)%3]}
				if v := next(); v%3 != 0 {
					item["v"] = int64(v % 8)
				}
				l = append(l, item)
			}
			return l
		case "s":
			l := []any{}
			for i := range n % 4 {
				l = append(l, strings.Repeat("x", i+1)) // distinct: a set
			}
			return l
		case "a":
			l := []any{}
			for range n % 4 {
				l = append(l, int64(next()%8))
			}
			return l
		case "am":
			return map[string]any{"x": int64(n % 8), "y": int64(next() % 3)}
		case "ap":
			m := map[string]any{}
			for i := range n % 4 {
				m[keys[i%3]] = int64(next() % 8)
			}
			return m
		default: // u
			m := map[string]any{"x": int64(n % 8)}
			if n%2 == 0 {
				m["extra"] = "kept"
			}
			return m
		}
	}
	spec, oldSpec := map[string]any{}, map[string]any{}
	for _, f := range []string{"n", "m", "s", "a", "am", "ap", "u"} {
		present := next()
		if present%4 == 0 {
			continue
		}
		v := value(f)
		spec[f] = v
		switch how := next() % 4; how {
		case 0: // the old object lacks the field
		case 1: // a different old value
			oldSpec[f] = value(f)
		default: // the same value
			oldSpec[f] = DeepCopyJSON(v)
		}
	}
	return map[string]any{"spec": spec}, map[string]any{"spec": oldSpec}
}

// DeepCopyJSON copies a JSON value of maps, slices and scalars.
func DeepCopyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = DeepCopyJSON(e)
		}
		return m
	case []any:
		if t == nil {
			return t
		}
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = DeepCopyJSON(e)
		}
		return l
	}
	return v
}
