package structuraldiff

import (
	"encoding/json"
	"math/rand"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
)

// TestRandomSchemasMatchKube puts generated structural schemas and values
// (mostly fitting, often not: wrong types, nulls, unknown fields,
// duplicates, numbers out of range) through apikit and kube-apiserver, and
// compares validation errors, pruned paths and the pruned and defaulted
// values. The seed is fixed, so a failure reproduces; for a longer search,
// STRUCTURALDIFF_SEED and STRUCTURALDIFF_SCHEMAS choose another seed and
// more schemas.
func TestRandomSchemasMatchKube(t *testing.T) {
	seed, schemas := int64(20261201), 400
	if v, err := strconv.ParseInt(os.Getenv("STRUCTURALDIFF_SEED"), 10, 64); err == nil {
		seed = v
	}
	if v, err := strconv.Atoi(os.Getenv("STRUCTURALDIFF_SCHEMAS")); err == nil {
		schemas = v
	}
	r := rand.New(rand.NewSource(seed))
	const valuesPerSchema = 6
	for i := 0; i < schemas; i++ {
		g := &gen{r: r}
		raw := g.schema(0, true)
		js, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		internal, ss := kubeSchema(t, string(js))
		if ss == nil {
			continue
		}
		s, err := schema.FromOpenAPIV3(js)
		if err != nil {
			continue
		}
		for j := 0; j < valuesPerSchema; j++ {
			val, err := json.Marshal(g.value(raw, 0))
			if err != nil {
				t.Fatal(err)
			}
			want := sorted(kubeValidate(t, internal, ss, decode(t, string(val))))
			var got []string
			for _, e := range structural.Validate(s, decode(t, string(val))) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(sorted(got), want) {
				t.Errorf("schema %s\nvalue %s\n apikit: %s\n   kube: %s", js, val, strings.Join(sorted(got), "\n         "), strings.Join(want, "\n         "))
				continue
			}
			kubeObj, ours := decode(t, string(val)), decode(t, string(val))
			wantPruned := kubePrune(t, ss, kubeObj, true)
			gotPruned := structural.Prune(s, ours, true)
			kubeDefault(ss, kubeObj)
			structural.Default(s, ours)
			if !reflect.DeepEqual(sorted(gotPruned), wantPruned) || !reflect.DeepEqual(ours, kubeObj) {
				a, _ := json.Marshal(ours)
				b, _ := json.Marshal(kubeObj)
				t.Errorf("schema %s\nvalue %s\n apikit: %q %s\n   kube: %q %s", js, val, gotPruned, a, wantPruned, b)
			}
		}
	}
}

type gen struct{ r *rand.Rand }

func (g *gen) chance(p float64) bool   { return g.r.Float64() < p }
func (g *gen) pick(l ...string) string { return l[g.r.Intn(len(l))] }

var names = []string{"a", "b", "c", "name", "port", "spec", "x"}

// schema returns a random structural schema node as decoded JSON.
func (g *gen) schema(depth int, root bool) map[string]any {
	kinds := []string{"object", "array", "string", "integer", "number", "boolean", "intorstring", "preserve"}
	kind := "object"
	if !root {
		if depth >= 3 {
			kinds = kinds[2:]
		}
		kind = g.pick(kinds...)
	}
	m := map[string]any{}
	switch kind {
	case "object":
		m["type"] = "object"
		if !root && g.chance(0.25) {
			m["additionalProperties"] = g.schema(depth+1, false)
		} else if !root && g.chance(0.1) {
			m["additionalProperties"] = g.chance(0.5)
		} else {
			props := map[string]any{}
			for i := 0; i < g.r.Intn(4); i++ {
				props[g.pick(names...)] = g.schema(depth+1, false)
			}
			if len(props) > 0 {
				m["properties"] = props
				var req []any
				for k := range props {
					if g.chance(0.3) {
						req = append(req, k)
					}
				}
				if len(req) > 0 {
					m["required"] = req
				}
			}
		}
		if !root && g.chance(0.2) {
			m["minProperties"] = g.r.Intn(2)
		}
		if !root && g.chance(0.2) {
			m["maxProperties"] = 1 + g.r.Intn(2)
		}
		if !root && g.chance(0.15) {
			m["x-kubernetes-embedded-resource"] = true
			m["x-kubernetes-preserve-unknown-fields"] = true
			delete(m, "additionalProperties")
		}
	case "array":
		m["type"] = "array"
		switch {
		case g.chance(0.3):
			m["items"] = map[string]any{"type": g.pick("string", "integer")}
			m["x-kubernetes-list-type"] = "set"
		case g.chance(0.3):
			m["items"] = map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{
				"name": map[string]any{"type": "string"}, "port": map[string]any{"type": "integer", "default": 80}}}
			m["x-kubernetes-list-type"] = "map"
			m["x-kubernetes-list-map-keys"] = []any{"name"}
		default:
			m["items"] = g.schema(depth+1, false)
		}
		if g.chance(0.2) {
			m["minItems"] = g.r.Intn(2)
		}
		if g.chance(0.2) {
			m["maxItems"] = 1 + g.r.Intn(2)
		}
	case "string":
		m["type"] = "string"
		if g.chance(0.3) {
			m["maxLength"] = 1 + g.r.Intn(4)
		}
		if g.chance(0.2) {
			m["minLength"] = g.r.Intn(3)
		}
		if g.chance(0.2) {
			m["pattern"] = g.pick("^[a-z]+$", "^x", "[0-9]")
		}
		if g.chance(0.2) {
			m["enum"] = []any{"a", "b", "xy"}
		}
		if g.chance(0.3) {
			m["format"] = g.pick("uuid", "date-time", "date", "byte", "hostname", "ipv4", "email", "k8s-short-name", "duration", "cidr", "nonsense", "int32")
		}
	case "integer", "number":
		m["type"] = kind
		bound := func() any {
			if kind == "number" && g.chance(0.5) {
				return float64(g.r.Intn(40)-10) / 4
			}
			return g.r.Intn(20) - 5
		}
		if g.chance(0.3) {
			m["minimum"] = bound()
			m["exclusiveMinimum"] = g.chance(0.3)
		}
		if g.chance(0.3) {
			m["maximum"] = bound()
			m["exclusiveMaximum"] = g.chance(0.3)
		}
		if g.chance(0.2) {
			m["multipleOf"] = []float64{2, 3, 0.5, 0.25}[g.r.Intn(4)]
		}
		if g.chance(0.3) {
			if kind == "integer" {
				m["format"] = g.pick("int32", "int64", "uuid")
			} else {
				m["format"] = g.pick("float", "double", "int32")
			}
		}
		if g.chance(0.15) {
			m["enum"] = []any{1, 2, 2.5}
		}
	case "boolean":
		m["type"] = "boolean"
	case "intorstring":
		m["x-kubernetes-int-or-string"] = true
		if g.chance(0.5) {
			m["anyOf"] = []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}
		}
		if g.chance(0.3) {
			m["pattern"] = "^[0-9]+%?$"
		}
	case "preserve":
		m["type"] = "object"
		m["x-kubernetes-preserve-unknown-fields"] = true
		if g.chance(0.5) {
			m["properties"] = map[string]any{"known": g.schema(depth+1, false)}
		}
	}
	if !root && g.chance(0.15) && kind != "preserve" {
		m["nullable"] = true
	}
	if !root && g.chance(0.15) && kind != "object" {
		junctor := g.pick("anyOf", "allOf", "oneOf", "not")
		sub := func() any {
			switch g.r.Intn(4) {
			case 0:
				return map[string]any{g.pick("minimum", "maxLength", "minItems", "maxProperties"): g.r.Intn(3)}
			case 1:
				return map[string]any{"pattern": g.pick("^a", "[0-9]"), "minLength": 1}
			case 2:
				return map[string]any{"enum": []any{"a", 1, true}}
			}
			return map[string]any{"maximum": g.r.Intn(5), "multipleOf": 2}
		}
		if _, taken := m["anyOf"]; !taken || junctor != "anyOf" {
			if junctor == "not" {
				m["not"] = sub()
			} else {
				m[junctor] = []any{sub(), sub()}
			}
		}
	}
	if kind == "object" && g.chance(0.15) {
		if props, ok := m["properties"].(map[string]any); ok && len(props) > 0 {
			var alts []any
			for k := range props {
				alts = append(alts, map[string]any{"required": []any{k}})
			}
			m[g.pick("anyOf", "oneOf", "allOf")] = alts
		}
	}
	if !root && g.chance(0.2) {
		if d := g.value(m, 2); d != nil {
			m["default"] = d
		}
	}
	return m
}

// breakSchema makes a generated schema non-structural, or otherwise
// invalid for a CRD, in one random way (or none).
func (g *gen) breakSchema(m map[string]any, depth int) {
	props, _ := m["properties"].(map[string]any)
	if len(props) > 0 && depth < 4 && g.chance(0.5) {
		for _, p := range props {
			g.breakSchema(p.(map[string]any), depth+1)
			return
		}
	}
	switch g.r.Intn(16) {
	case 0:
		delete(m, "type")
	case 1:
		m["anyOf"] = []any{map[string]any{"type": "string", "description": "d"}}
	case 2:
		m["$ref"] = "#/definitions/x"
	case 3:
		m["uniqueItems"] = true
	case 4:
		m["default"] = map[string]any{"unknown": 1}
	case 5:
		m["x-kubernetes-list-type"] = g.pick("set", "map", "bag")
	case 6:
		m["x-kubernetes-map-type"] = g.pick("atomic", "bag")
	case 7:
		m["additionalProperties"] = map[string]any{"type": "string"}
	case 8:
		m["x-kubernetes-preserve-unknown-fields"] = false
	case 9:
		m["pattern"] = "(["
	case 10:
		m["x-kubernetes-embedded-resource"] = true
	case 11:
		m["nullable"] = true
	case 12:
		m["not"] = map[string]any{"properties": map[string]any{"zz": map[string]any{"maxLength": 1}}}
	case 13:
		m["x-kubernetes-int-or-string"] = true
	case 14:
		m["properties"] = map[string]any{"metadata": map[string]any{"type": "object", "properties": map[string]any{"labels": map[string]any{"type": "object"}}}}
	case 15:
		m["x-kubernetes-validations"] = []any{map[string]any{"rule": " "}, map[string]any{"rule": "true", "message": "a\nb", "reason": g.pick("FieldValueInvalid", "Nope")}}
	}
}

// TestRandomCRDSchemasMatchKube breaks generated schemas in one way each
// and compares CheckStructural with kube-apiserver's CRD validation.
func TestRandomCRDSchemasMatchKube(t *testing.T) {
	seed, schemas := int64(20261202), 300
	if v, err := strconv.ParseInt(os.Getenv("STRUCTURALDIFF_SEED"), 10, 64); err == nil {
		seed = v
	}
	if v, err := strconv.Atoi(os.Getenv("STRUCTURALDIFF_SCHEMAS")); err == nil {
		schemas = v
	}
	r := rand.New(rand.NewSource(seed))
	const internalPath = "spec.validation.openAPIV3Schema"
	for i := 0; i < schemas; i++ {
		g := &gen{r: r}
		raw := g.schema(0, true)
		g.breakSchema(raw, 0)
		js, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, m := range kubeCheckSchema(t, string(js)) {
			m = strings.ReplaceAll(m, internalPath, schemaPath)
			if strings.HasPrefix(m, schemaPath) {
				want = append(want, m)
			}
		}
		var got []string
		for _, e := range structural.CheckStructural(decode(t, string(js)).(map[string]any), schemaPath) {
			got = append(got, e.Error())
		}
		if !reflect.DeepEqual(sorted(got), sorted(want)) {
			t.Errorf("schema %s\n apikit: %s\n   kube: %s", js, strings.Join(sorted(got), "\n         "), strings.Join(sorted(want), "\n         "))
		}
	}
}

// value returns a random value for a schema node: usually fitting it.
func (g *gen) value(s map[string]any, depth int) any {
	if g.chance(0.08) {
		return nil
	}
	if g.chance(0.08) {
		return g.scalar()
	}
	if depth > 5 {
		return g.scalar()
	}
	typ, _ := s["type"].(string)
	if b, _ := s["x-kubernetes-int-or-string"].(bool); b {
		if g.chance(0.5) {
			return g.r.Intn(200)
		}
		return g.pick("50%", "x", "10")
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for k, p := range props {
			if g.chance(0.7) {
				out[k] = g.value(p.(map[string]any), depth+1)
			}
		}
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			for i := 0; i < g.r.Intn(3); i++ {
				out[g.pick(names...)] = g.value(ap, depth+1)
			}
		}
		if b, _ := s["x-kubernetes-embedded-resource"].(bool); b {
			if g.chance(0.7) {
				out["apiVersion"] = g.pick("v1", "a/b", "a/b/c", "")
			}
			if g.chance(0.7) {
				out["kind"] = g.pick("Pod", "my_kind", "")
			}
			if g.chance(0.5) {
				out["metadata"] = map[string]any{"name": g.pick("ok", "a/b", ".."), "labels": map[string]any{g.pick("ok", "-bad"): g.pick("v", "-v")}}
			}
		}
		if g.chance(0.3) {
			out["unknown"+g.pick(names...)] = g.scalar()
		}
		return out
	case "array":
		items, _ := s["items"].(map[string]any)
		var out []any
		for i := 0; i < g.r.Intn(4); i++ {
			if len(out) > 0 && g.chance(0.3) {
				out = append(out, out[0]) // a duplicate
				continue
			}
			out = append(out, g.value(items, depth+1))
		}
		if out == nil {
			out = []any{}
		}
		return out
	case "string":
		return g.pick("a", "b", "xy", "abcde", "ABC", "123e4567-e89b-12d3-a456-426614174000", "2024-01-02T10:00:00Z", "2024-01-02", "aGk=", "my-host.example.com", "10.0.0.1", "10.0.0.0/8", "a@b.c", "3 days", "")
	case "integer":
		return g.r.Intn(30) - 10
	case "number":
		if g.chance(0.5) {
			return float64(g.r.Intn(80)-20) / 4
		}
		return g.r.Intn(30) - 10
	case "boolean":
		return g.chance(0.5)
	}
	return g.scalar()
}

func (g *gen) scalar() any {
	switch g.r.Intn(5) {
	case 0:
		return g.pick("s", "", "x")
	case 1:
		return g.r.Intn(10)
	case 2:
		return 1.5
	case 3:
		return true
	}
	return map[string]any{"k": 1}
}
