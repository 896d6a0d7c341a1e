package cel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema/structural"
)

// The types below gather what encoding/json does with Go values, each
// quirk of it one field or one embedding: JSONView must read the same
// values as the JSON.

type viewSpec struct {
	Size     int               `json:"size"`
	Mode     string            `json:"mode,omitempty"`
	Ratio    float64           `json:"ratio,omitempty"`
	Small    float32           `json:"small"`
	Big      uint64            `json:"big,omitempty"`
	Flag     *bool             `json:"flag,omitempty"`
	Null     *int              `json:"null"`
	Items    []viewItem        `json:"items,omitempty"`
	NilList  []string          `json:"nilList"`
	Data     []byte            `json:"data,omitempty"`
	Counts   map[string]int    `json:"counts,omitempty"`
	ByNumber map[int]string    `json:"byNumber,omitempty"`
	Any      any               `json:"any,omitempty"`
	Raw      json.RawMessage   `json:"raw,omitempty"`
	When     meta.Time         `json:"when,omitzero"`
	Since    *meta.Time        `json:"since,omitempty"`
	Text     textual           `json:"text"`
	PtrText  ptrTextual        `json:"ptrText"`
	Quoted   quoted            `json:"quoted"`
	Pair     [2]int8           `json:"pair"`
	Zero     zeroStruct        `json:"zero,omitzero"`
	Nested   map[string]any    `json:"nested,omitempty"`
	Strings  map[string]string `json:"strings"`
	Keys     map[string]string `json:"keys,omitempty"`
	Ignored  string            `json:"-"`
	Dash     string            `json:"-,"`
	BadTag   string            `json:"a\"b"`
	NoTag    int
	hidden   int
}

type viewItem struct {
	Name  string     `json:"name"`
	Value *string    `json:"value,omitempty"`
	Kids  []viewItem `json:"kids,omitempty"`
}

// textual encodes itself as text, ptrTextual through its pointer (used
// only where encoding/json can take its address).
type textual struct{ n int }

func (t textual) MarshalText() ([]byte, error) { return []byte(fmt.Sprintf("t%d", t.n)), nil }

type ptrTextual struct{ N int }

func (t *ptrTextual) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf(`{"p":%d}`, t.N)), nil }

// quoted has a ",string" field: read through its JSON.
type quoted struct {
	N int `json:"n,string"`
}

type zeroStruct struct{ A int }

// Embedding: promoted fields, a shallower field hiding a deeper one, a
// tagged one winning a tie, two untagged ones at one depth annihilating.
type base struct {
	Shared string `json:"shared"`
	Deep   string `json:"deep"`
	Tie    string `json:"tie"`
	Tagged string
}

type other struct {
	Tie    string `json:"tie"`
	Tagged string `json:"Tagged"`
}

type unexportedEmbed struct{ Visible string }

type viewObject struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	base
	*other
	*unexportedEmbed
	Shared string   `json:"shared,omitempty"`
	Spec   viewSpec `json:"spec"`
	Status *struct {
		Ready bool `json:"ready"`
	} `json:"status,omitempty"`
}

func viewObjects() map[string]any {
	yes := true
	v := "v"
	now := meta.NewTime(time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC))
	full := &viewObject{
		TypeMeta:        meta.TypeMeta{APIVersion: "example.com/v1", Kind: "Gadget"},
		ObjectMeta:      meta.ObjectMeta{Name: "g1", Namespace: "ns", Labels: map[string]string{"app": "x", "tier": "web"}, CreationTimestamp: now, Generation: 2},
		base:            base{Shared: "deep", Deep: "d", Tie: "t", Tagged: "untagged"},
		other:           &other{Tie: "t2", Tagged: "tagged"},
		unexportedEmbed: &unexportedEmbed{Visible: "yes"},
		Spec: viewSpec{Size: 3, Mode: "fast", Ratio: 2, Small: 0.1, Big: math.MaxUint64, Flag: &yes,
			Items: []viewItem{{Name: "a", Value: &v}, {Name: "b", Kids: []viewItem{{Name: "c"}}}}, Data: []byte("hello"),
			Counts: map[string]int{"x": 1}, ByNumber: map[int]string{2: "two", 10: "ten"},
			Any: map[string]any{"n": 1.5, "i": 7, "l": []any{uint8(1), "s", nil}}, Raw: json.RawMessage(`{"r":[1,2.5]}`),
			When: now, Since: &now, Text: textual{4}, PtrText: ptrTextual{5}, Quoted: quoted{6}, Pair: [2]int8{-1, 1},
			Nested: map[string]any{"deep": map[string]any{"x": []any{map[string]any{"y": true}}}}, Strings: map[string]string{},
			Ignored: "no", Dash: "dash", BadTag: "bad", NoTag: 9, hidden: 1},
	}
	full.Status = &struct {
		Ready bool `json:"ready"`
	}{Ready: true}
	return map[string]any{
		"full":          full,
		"empty":         &viewObject{},
		"floats":        &viewSpec{Ratio: 1e21, Small: 1e-7, Any: []any{math.Copysign(0, -1), 1e20, 0.5, float32(3), 123456789.0}},
		"invalid utf-8": &viewSpec{Mode: "a\xffb\xfe\xfdc", Strings: map[string]string{"k": "v\xff"}, Keys: map[string]string{"k\xff": "v", "k\xfe": "w"}, Items: []viewItem{{Name: "\xc3"}}},
		"items":         &viewItem{Name: "only"},
	}
}

// roundTrip is the JSON-built view: v encoded, decoded as
// schema/structural decodes.
func roundTrip(t testing.TB, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	j, err := structural.DecodeJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestJSONViewIsTheJSON: the values a view reads, built whole, are the
// JSON's.
func TestJSONViewIsTheJSON(t *testing.T) {
	for name, obj := range viewObjects() {
		t.Run(name, func(t *testing.T) {
			v, ok := JSONView(obj)
			if !ok {
				t.Fatal("no view")
			}
			got, err := jsonOf(v)
			if err != nil {
				t.Fatal(err)
			}
			if want := roundTrip(t, obj); !reflect.DeepEqual(got, want) {
				t.Errorf("view\n%#v\nJSON\n%#v", got, want)
			}
		})
	}
}

// TestJSONViewDefaults: apiVersion and kind fill in for an object without
// them, as the JSON sent for it carries them; its own win.
func TestJSONViewDefaults(t *testing.T) {
	d := []FieldDefault{{Name: "apiVersion", Value: "example.com/v1"}, {Name: "kind", Value: "Gadget"}}
	obj := &viewObject{ObjectMeta: meta.ObjectMeta{Name: "g"}}
	obj.APIVersion = "own/v2"
	v, _ := JSONView(obj, d...)
	got, err := jsonOf(v)
	if err != nil {
		t.Fatal(err)
	}
	m := got.(map[string]any)
	if m["apiVersion"] != "own/v2" || m["kind"] != "Gadget" || v.(*jsonStruct).Size() != types.Int(len(m)) {
		t.Errorf("got %v", m)
	}
	if _, ok := JSONView(&ptrTextual{}); ok {
		t.Error("a type that encodes itself has a view")
	}
	if _, ok := JSONView(3); ok {
		t.Error("an int has a view")
	}
}

// TestJSONViewTraits: a view's map and list methods answer as cel-go's
// over the JSON, errors included.
func TestJSONViewTraits(t *testing.T) {
	for name, obj := range viewObjects() {
		t.Run(name, func(t *testing.T) {
			v, _ := JSONView(obj)
			m := v.(traits.Mapper)
			j := types.DefaultTypeAdapter.NativeToValue(roundTrip(t, obj)).(traits.Mapper)
			for _, k := range []ref.Val{types.String("spec"), types.String("nope"), types.Int(1)} {
				got, want := m.Get(k), j.Get(k)
				if types.IsError(got) || types.IsError(want) {
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("Get(%v): %v, want %v", k, got, want)
					}
				} else if got.Equal(want) != types.True {
					t.Errorf("Get(%v) differs", k)
				}
				if m.Contains(k) != j.Contains(k) {
					t.Errorf("Contains(%v): %v", k, m.Contains(k))
				}
			}
			if m.Size() != j.Size() || m.Type() != j.Type() || m.ConvertToType(types.TypeType) != j.ConvertToType(types.TypeType) {
				t.Errorf("size %v type %v, want %v %v", m.Size(), m.Type(), j.Size(), j.Type())
			}
			if got, want := fmt.Sprint(m.ConvertToType(types.ListType)), fmt.Sprint(j.ConvertToType(types.ListType)); got != want {
				t.Errorf("to list: %s, want %s", got, want)
			}
		})
	}
}

// viewExpressions read objects in every way an admission expression can;
// those over maps of several keys keep away from their (random) order.
var viewExpressions = []string{
	"object",
	"object.metadata.name",
	"object.metadata.labels",
	"has(object.metadata.labels) && 'app' in object.metadata.labels",
	"has(object.metadata.annotations)",
	"object.metadata.annotations",
	"object.metadata.missing",
	"object.spec.size < 10 && object.spec.size + 1 == 4",
	"object.spec.ratio",
	"object.spec.ratio == 2",
	"type(object.spec.ratio)",
	"object.spec.small",
	"object.spec.big",
	"object.spec['null'] == null",
	"object.spec.nilList",
	"object.spec.items",
	"object.spec.items[1]",
	"object.spec.items[5]",
	"object.spec.items[-1]",
	"object.spec.items['x']",
	"object.spec.items.size()",
	"object.spec.items.all(i, i.name.size() == 1)",
	"object.spec.items.map(i, i.name)",
	"object.spec.items.exists(i, has(i.value))",
	"object.spec.items + [1]",
	"[1] + object.spec.items",
	"object.spec.items == [dyn({'name': 'a', 'value': 'v'}), dyn({'name': dyn('b'), 'kids': dyn([{'name': 'c'}])})]",
	"object.spec.items[1].kids[0].name",
	"{'name': 'b'} in object.spec.items",
	"object.spec.items == [{'name': 'a', 'value': 'v'}]",
	"[{'name': 'a', 'value': 'v'}] == object.spec.items",
	"object.metadata == {'name': 'g1'}",
	"object.spec.data",
	"object.spec.counts",
	"object.spec.byNumber",
	"object.spec.any",
	"object.spec.raw",
	"object.spec.when",
	"timestamp(object.spec.when) < timestamp('2030-01-01T00:00:00Z')",
	"object.spec.since == object.metadata.creationTimestamp",
	"object.spec.text + object.spec.mode",
	"object.spec.ptrText",
	"object.spec.quoted.n",
	"object.spec.pair",
	"object.spec.zero",
	"object.spec.nested.deep.x[0].y",
	"object.spec.strings",
	"object.spec.strings.size() == 0",
	"object.spec.strings.k",
	"object.spec.keys",
	"object.spec.Ignored",
	"object.spec['-']",
	"object.spec.NoTag",
	"object.spec.hidden",
	"object.shared + object.deep + object.tie",
	"has(object.tie)",
	"object.Tagged",
	"object.Visible",
	"object.status.ready",
	"object.size()",
	"type(object)",
	"type(object.spec.items)",
	"dyn(object) == oldObject",
	"object == object",
	"object.spec == oldObject.spec",
	"object.spec != {'size': 3}",
	"object.metadata.labels == {'app': 'x', 'tier': 'web'}",
	"{'app': 'x', 'tier': 'web'} == object.metadata.labels",
	"object.metadata.labels.all(k, k.size() > 2)",
	"object.metadata.filter(k, k == 'name')",
	"object.spec.mode.size()",
	"object[1]",
	"object.spec.mode.startsWith('a')",
	"object.spec.any.map(x, type(x))",
	"string(object.spec.size)",
	"int(object.spec.small)",
	"object.name",
	"object.size",
	"object.items[0]",
	"object.items.name",
}

// TestJSONViewExpressions: every expression reads from a view what it
// reads from the JSON-built value: the same result, or the same error.
func TestJSONViewExpressions(t *testing.T) {
	c, err := NewCompiler(AdmissionVariables()...)
	if err != nil {
		t.Fatal(err)
	}
	for name, obj := range viewObjects() {
		other := viewObjects()[name]
		for _, expr := range viewExpressions {
			t.Run(name+"/"+expr, func(t *testing.T) {
				e, err := c.Compile(expr, nil)
				if err != nil {
					t.Fatal(err)
				}
				compareViews(t, e, obj, other)
			})
		}
	}
}

// compareViews evaluates e over obj and old as views and as their JSON,
// and fails when the two differ.
func compareViews(t testing.TB, e *Expression, obj, old any) {
	t.Helper()
	ov, _ := JSONView(obj)
	oldv, _ := JSONView(old)
	viewed, viewCost, viewErr := e.Eval(context.Background(), map[string]any{ObjectVarName: ov, OldObjectVarName: oldv}, PerCallLimit)
	decoded, jsonCost, jsonErr := e.Eval(context.Background(), map[string]any{ObjectVarName: roundTrip(t, obj), OldObjectVarName: roundTrip(t, old)}, PerCallLimit)
	if fmt.Sprint(viewErr) != fmt.Sprint(jsonErr) {
		t.Fatalf("%s: error %v over the view, %v over the JSON", e.Source, viewErr, jsonErr)
	}
	if viewCost != jsonCost {
		t.Errorf("%s: cost %d over the view, %d over the JSON", e.Source, viewCost, jsonCost)
	}
	if viewErr != nil {
		return
	}
	if viewed.Type() != decoded.Type() {
		t.Fatalf("%s: type %v over the view, %v over the JSON", e.Source, viewed.Type(), decoded.Type())
	}
	if viewed.Equal(decoded) != types.True || decoded.Equal(viewed) != types.True {
		t.Fatalf("%s: %v over the view, %v over the JSON", e.Source, viewed, decoded)
	}
	vj, verr := JSONValue(viewed)
	dj, derr := JSONValue(decoded)
	if fmt.Sprint(verr) != fmt.Sprint(derr) || !reflect.DeepEqual(vj, dj) {
		t.Fatalf("%s: JSON %#v (%v) over the view, %#v (%v) over the JSON", e.Source, vj, verr, dj, derr)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[any](), reflect.TypeFor[map[string]any](), reflect.TypeFor[[]any]()} {
		vn, verr := viewed.ConvertToNative(typ)
		dn, derr := decoded.ConvertToNative(typ)
		if (verr == nil) != (derr == nil) || !reflect.DeepEqual(normalize(vn), normalize(dn)) {
			t.Fatalf("%s: as %v: %#v (%v) over the view, %#v (%v) over the JSON", e.Source, typ, vn, verr, dn, derr)
		}
	}
}

// normalize makes natives comparable: maps cel-go leaves as
// map[any]any become map[string]any.
func normalize(v any) any {
	switch x := v.(type) {
	case map[any]any:
		out := map[string]any{}
		for k, e := range x {
			out[fmt.Sprint(k)] = normalize(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case ref.Val:
		return normalize(x.Value())
	}
	return v
}

// FuzzJSONView decodes arbitrary JSON into the test's object type and
// compares its view with its JSON, whole and through the expressions.
//
//	go test ./cel -run XXX -fuzz FuzzJSONView -fuzztime 1m
func FuzzJSONView(f *testing.F) {
	for _, obj := range viewObjects() {
		data, _ := json.Marshal(obj)
		f.Add(string(data))
	}
	f.Add(`{"spec":{"any":{"a":[1e300,-0,0.000001,1e-7,18446744073709551615]},"nested":{"":null}}}`)
	c, err := NewCompiler(AdmissionVariables()...)
	if err != nil {
		f.Fatal(err)
	}
	var exprs []*Expression
	for _, s := range viewExpressions {
		e, err := c.Compile(s, nil)
		if err != nil {
			f.Fatal(err)
		}
		exprs = append(exprs, e)
	}
	f.Fuzz(func(t *testing.T, data string) {
		// A value of the wrong type leaves its field as it was; the
		// rest is decoded.
		var obj viewObject
		var syntax *json.SyntaxError
		if err := json.Unmarshal([]byte(data), &obj); errors.As(err, &syntax) {
			return
		}
		if _, err := json.Marshal(&obj); err != nil {
			return
		}
		v, _ := JSONView(&obj)
		got, err := jsonOf(v)
		if err != nil {
			t.Fatal(err)
		}
		if want := roundTrip(t, &obj); !reflect.DeepEqual(got, want) {
			t.Fatalf("view\n%#v\nJSON\n%#v", got, want)
		}
		for _, e := range exprs {
			if strings.Contains(e.Source, ".map(") || strings.Contains(e.Source, ".filter(") {
				continue // lists in the order of a map's keys
			}
			compareViews(t, e, &obj, &obj)
		}
	})
}
