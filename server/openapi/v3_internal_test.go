package openapi

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/go-openapi/spec"
)

func TestConvertSchema(t *testing.T) {
	tests := []struct {
		name string
		in   string // Swagger 2.0
		want string // OpenAPI 3.0
	}{
		{"bare ref", `{"$ref":"#/definitions/a.B"}`, `{"$ref":"#/components/schemas/a.B"}`},
		{"ref with a description becomes allOf",
			`{"description":"d","$ref":"#/definitions/a.B"}`,
			`{"description":"d","allOf":[{"$ref":"#/components/schemas/a.B"}]}`},
		{"nested refs",
			`{"type":"object","properties":{"p":{"type":"array","items":{"$ref":"#/definitions/a.B"}},"m":{"type":"object","additionalProperties":{"$ref":"#/definitions/a.C"}}}}`,
			`{"type":"object","properties":{"p":{"type":"array","items":{"$ref":"#/components/schemas/a.B"}},"m":{"type":"object","additionalProperties":{"$ref":"#/components/schemas/a.C"}}}}`},
		{"x-nullable", `{"type":"string","x-nullable":true}`, `{"type":"string","nullable":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s spec.Schema
			if err := json.Unmarshal([]byte(tt.in), &s); err != nil {
				t.Fatal(err)
			}
			got, err := convertSchema(&s)
			if err != nil {
				t.Fatal(err)
			}
			gotJSON, _ := json.Marshal(got)
			var a, b any
			_ = json.Unmarshal(gotJSON, &a)
			_ = json.Unmarshal([]byte(tt.want), &b)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("got %s\nwant %s", gotJSON, tt.want)
			}
		})
	}
}

func TestConvertSchemaKeepsIntegersExact(t *testing.T) {
	// go-restful-openapi parses integer defaults into int64; a round trip
	// through float64 would change those beyond 2^53.
	s := spec.Int64Property()
	s.Default = int64(9007199254740993)
	got, err := convertSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if want := `{"default":9007199254740993,"format":"int64","type":"integer"}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestOperationExtensionsInline(t *testing.T) {
	op := operation3{OperationID: "x", Responses: map[string]response3{"200": {Description: "OK"}},
		Extensions: map[string]any{extAction: "get"}}
	b, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if m[extAction] != "get" || m["operationId"] != "x" || m["responses"] == nil {
		t.Errorf("got %s", b)
	}
}

func TestConvertParameter(t *testing.T) {
	p := spec.QueryParam("labelSelector").Typed("string", "")
	p.Description = "d"
	got := convertParameter(p)
	if got.Name != "labelSelector" || got.In != "query" || got.Required || got.Description != "d" {
		t.Errorf("got %+v", got)
	}
	if s := got.Schema.(map[string]any); s["type"] != "string" {
		t.Errorf("schema = %v", s)
	}
	path := convertParameter(spec.PathParam("name").Typed("string", ""))
	if !path.Required {
		t.Error("path parameters are required in OpenAPI 3.0")
	}
	arr := spec.QueryParam("dryRun").CollectionOf(spec.NewItems().Typed("string", ""), "multi")
	got = convertParameter(arr)
	if got.Style != "form" || got.Explode == nil || !*got.Explode {
		t.Errorf("multi collection: style %q explode %v", got.Style, got.Explode)
	}
	if items := got.Schema.(map[string]any)["items"].(map[string]any); items["type"] != "string" {
		t.Errorf("items = %v", items)
	}
}
