package meta

import "encoding/json"

// Table is the server-side tabular form of a list or an object, requested
// with "Accept: application/json;as=Table;v=v1;g=meta.k8s.io". kubectl get
// prints it as it comes.
type Table struct {
	TypeMeta          `json:",inline"`
	ListMeta          `json:"metadata"`
	ColumnDefinitions []TableColumnDefinition `json:"columnDefinitions"`
	Rows              []TableRow              `json:"rows"`
}

// TableColumnDefinition describes one column of a Table.
type TableColumnDefinition struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format"`
	Description string `json:"description"`
	// Priority 0 columns show by default; higher ones only with -o wide.
	Priority int32 `json:"priority"`
}

// TableRow is one object's row. Object holds the object, its metadata only
// (a PartialObjectMetadata), or nothing, as includeObject asks.
type TableRow struct {
	Cells      []any               `json:"cells"`
	Conditions []TableRowCondition `json:"conditions,omitempty"`
	// Object is written even when nil, as "object":null: Kubernetes' field
	// is a runtime.RawExtension struct, which omitempty never omits.
	Object json.RawMessage `json:"object"`
}

// TableRowCondition marks a row, e.g. as Completed.
type TableRowCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// PartialObjectMetadata is an object reduced to its metadata; Table rows
// carry it by default.
type PartialObjectMetadata struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
}

// IncludeObjectPolicy says what each Table row's Object holds.
type IncludeObjectPolicy string

// The includeObject values.
const (
	IncludeNone     IncludeObjectPolicy = "None"
	IncludeMetadata IncludeObjectPolicy = "Metadata"
	IncludeObject   IncludeObjectPolicy = "Object"
)

// TableOptions are the query options of a Table request.
type TableOptions struct {
	IncludeObject IncludeObjectPolicy
	// NoHeaders leaves the column definitions out: a watch sends them
	// with its first Table only, as kube-apiserver does.
	NoHeaders bool
}
