package meta

import (
	"encoding/json"
	"testing"
)

func TestTableJSON(t *testing.T) {
	partial := json.RawMessage(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","creationTimestamp":null}}`)
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"empty table", Table{}, `{"metadata":{},"columnDefinitions":null,"rows":null}`},
		{"table", Table{
			TypeMeta: TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
			ListMeta: ListMeta{ResourceVersion: "5"},
			ColumnDefinitions: []TableColumnDefinition{
				{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace."},
				{Name: "Age", Type: "string", Description: "CreationTimestamp is a timestamp.", Priority: 1},
			},
			Rows: []TableRow{
				{Cells: []any{"a", "5m"}, Object: partial},
				{Cells: []any{"b", int64(3), 1.5, true, nil}, Conditions: []TableRowCondition{{Type: "Completed", Status: "True"}}},
			},
		}, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"5"},"columnDefinitions":[` +
			`{"name":"Name","type":"string","format":"name","description":"Name must be unique within a namespace.","priority":0},` +
			`{"name":"Age","type":"string","format":"","description":"CreationTimestamp is a timestamp.","priority":1}],"rows":[` +
			`{"cells":["a","5m"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","creationTimestamp":null}}},` +
			// includeObject=None: Kubernetes still writes the RawExtension, as null.
			`{"cells":["b",3,1.5,true,null],"conditions":[{"type":"Completed","status":"True"}],"object":null}]}`},
		{"row condition with reason", TableRowCondition{Type: "Completed", Status: "True", Reason: "Done", Message: "finished"},
			`{"type":"Completed","status":"True","reason":"Done","message":"finished"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkJSON(t, tt.v, tt.want) })
	}
}
