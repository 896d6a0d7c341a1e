package extensions

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// jsonPath is a simple JSON path as printer columns, selectable fields
// and the scale subresource use: fields after dots (a dot escaped as \.),
// list indexes [n] and quoted keys ['a.b'].
type jsonPath []pathStep

type pathStep struct {
	field string
	index int // -1 for a field
}

func parseJSONPath(s string) (jsonPath, error) {
	if !strings.HasPrefix(s, ".") {
		return nil, fmt.Errorf("%q must start with .", s)
	}
	var p jsonPath
	i := 1
	for i < len(s) {
		switch {
		case s[i] == '.':
			i++
		case s[i] == '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("%q: unterminated [", s)
			}
			inner := s[i+1 : i+end]
			i += end + 1
			if len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0] {
				p = append(p, pathStep{field: inner[1 : len(inner)-1], index: -1})
				continue
			}
			n, err := strconv.Atoi(inner)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%q: unsupported index [%s]", s, inner)
			}
			p = append(p, pathStep{index: n})
		default:
			var b strings.Builder
			for i < len(s) && s[i] != '.' && s[i] != '[' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
				i++
			}
			p = append(p, pathStep{field: b.String(), index: -1})
		}
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("%q names no field", s)
	}
	return p, nil
}

// find returns the value at the path in o.
func (p jsonPath) find(o *Object) (any, bool) {
	var v any
	switch first := p[0]; {
	case first.index >= 0:
		return nil, false
	case first.field == "metadata":
		b, err := json.Marshal(&o.ObjectMeta)
		if err != nil {
			return nil, false
		}
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			return nil, false
		}
		v = m
	case first.field == "apiVersion":
		v = o.APIVersion
	case first.field == "kind":
		v = o.Kind
	case first.field == "status":
		if o.Status == nil {
			return nil, false
		}
		v = o.Status
	default:
		var ok bool
		if v, ok = o.Content[first.field]; !ok {
			return nil, false
		}
	}
	return p[1:].in(v)
}

// in returns the value at the path in v.
func (p jsonPath) in(v any) (any, bool) {
	for _, step := range p {
		if step.index >= 0 {
			l, ok := v.([]any)
			if !ok || step.index >= len(l) {
				return nil, false
			}
			v = l[step.index]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[step.field]; !ok {
			return nil, false
		}
	}
	return v, true
}

// set sets the value at a path of fields (no indexes) in m, making the
// objects on the way; it fails when a value on the way is not an object.
func (p jsonPath) set(m map[string]any, value any) error {
	for i, step := range p {
		if step.index >= 0 {
			return fmt.Errorf("cannot set a list element")
		}
		if i == len(p)-1 {
			m[step.field] = value
			return nil
		}
		next, ok := m[step.field]
		if !ok || next == nil {
			n := map[string]any{}
			m[step.field] = n
			m = n
			continue
		}
		if m, ok = next.(map[string]any); !ok {
			return fmt.Errorf("%s is not an object", step.field)
		}
	}
	return nil
}

// pathFields splits a simple path (.spec.replicas) at its dots, as
// kube-apiserver splits the scale subresource's and selectable fields'
// paths for apimachinery's unstructured accessors: no brackets, no
// escapes.
func pathFields(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "."), ".")
}
