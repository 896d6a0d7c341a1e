package extensions

import (
	"encoding/json"

	"github.com/apikit-dev/apikit/internal/k8sproto"
)

// crdProtobuf reads CustomResourceDefinitions in protobuf, as client-go's
// apiextensions clientset (and installers built on it) posts them.
var crdProtobuf = k8sproto.NewDecoder[CustomResourceDefinition]("CustomResourceDefinition",
	k8sproto.As[jsonSchemaProps]("JSONSchemaProps"))

// ProtobufToJSON decodes a CustomResourceDefinition in protobuf
// (apiextensions.k8s.io/v1's field numbers) into its JSON form.
func ProtobufToJSON(body []byte) ([]byte, error) { return crdProtobuf.ToJSON(body) }

// jsonSchemaProps is the wire form of a version's openAPIV3Schema, which
// a CRD keeps as the JSON the client wrote: decoded from protobuf, it is
// written as that JSON (apiextensions.k8s.io/v1 JSONSchemaProps, the JSON
// names and the field numbers of its generated.proto).
type jsonSchemaProps struct {
	ID                   string                              `json:"id,omitempty" protobuf:"1"`
	Schema               string                              `json:"$schema,omitempty" protobuf:"2"`
	Ref                  *string                             `json:"$ref,omitempty" protobuf:"3"`
	Description          string                              `json:"description,omitempty" protobuf:"4"`
	Type                 string                              `json:"type,omitempty" protobuf:"5"`
	Format               string                              `json:"format,omitempty" protobuf:"6"`
	Title                string                              `json:"title,omitempty" protobuf:"7"`
	Default              json.RawMessage                     `json:"default,omitempty" protobuf:"8"`
	Maximum              *float64                            `json:"maximum,omitempty" protobuf:"9"`
	ExclusiveMaximum     bool                                `json:"exclusiveMaximum,omitempty" protobuf:"10"`
	Minimum              *float64                            `json:"minimum,omitempty" protobuf:"11"`
	ExclusiveMinimum     bool                                `json:"exclusiveMinimum,omitempty" protobuf:"12"`
	MaxLength            *int64                              `json:"maxLength,omitempty" protobuf:"13"`
	MinLength            *int64                              `json:"minLength,omitempty" protobuf:"14"`
	Pattern              string                              `json:"pattern,omitempty" protobuf:"15"`
	MaxItems             *int64                              `json:"maxItems,omitempty" protobuf:"16"`
	MinItems             *int64                              `json:"minItems,omitempty" protobuf:"17"`
	UniqueItems          bool                                `json:"uniqueItems,omitempty" protobuf:"18"`
	MultipleOf           *float64                            `json:"multipleOf,omitempty" protobuf:"19"`
	Enum                 []json.RawMessage                   `json:"enum,omitempty" protobuf:"20"`
	MaxProperties        *int64                              `json:"maxProperties,omitempty" protobuf:"21"`
	MinProperties        *int64                              `json:"minProperties,omitempty" protobuf:"22"`
	Required             []string                            `json:"required,omitempty" protobuf:"23"`
	Items                *jsonSchemaPropsOrArray             `json:"items,omitempty" protobuf:"24"`
	AllOf                []jsonSchemaProps                   `json:"allOf,omitempty" protobuf:"25"`
	OneOf                []jsonSchemaProps                   `json:"oneOf,omitempty" protobuf:"26"`
	AnyOf                []jsonSchemaProps                   `json:"anyOf,omitempty" protobuf:"27"`
	Not                  *jsonSchemaProps                    `json:"not,omitempty" protobuf:"28"`
	Properties           map[string]jsonSchemaProps          `json:"properties,omitempty" protobuf:"29"`
	AdditionalProperties *jsonSchemaPropsOrBool              `json:"additionalProperties,omitempty" protobuf:"30"`
	PatternProperties    map[string]jsonSchemaProps          `json:"patternProperties,omitempty" protobuf:"31"`
	Dependencies         map[string]jsonSchemaPropsOrStrings `json:"dependencies,omitempty" protobuf:"32"`
	AdditionalItems      *jsonSchemaPropsOrBool              `json:"additionalItems,omitempty" protobuf:"33"`
	Definitions          map[string]jsonSchemaProps          `json:"definitions,omitempty" protobuf:"34"`
	ExternalDocs         *externalDocumentation              `json:"externalDocs,omitempty" protobuf:"35"`
	Example              json.RawMessage                     `json:"example,omitempty" protobuf:"36"`
	Nullable             bool                                `json:"nullable,omitempty" protobuf:"37"`
	PreserveUnknown      *bool                               `json:"x-kubernetes-preserve-unknown-fields,omitempty" protobuf:"38"`
	EmbeddedResource     bool                                `json:"x-kubernetes-embedded-resource,omitempty" protobuf:"39"`
	IntOrString          bool                                `json:"x-kubernetes-int-or-string,omitempty" protobuf:"40"`
	ListMapKeys          []string                            `json:"x-kubernetes-list-map-keys,omitempty" protobuf:"41"`
	ListType             *string                             `json:"x-kubernetes-list-type,omitempty" protobuf:"42"`
	MapType              *string                             `json:"x-kubernetes-map-type,omitempty" protobuf:"43"`
	Validations          []validationRule                    `json:"x-kubernetes-validations,omitempty" protobuf:"44"`
}

// jsonSchemaPropsOrArray is items: one schema, or a list (a tuple).
type jsonSchemaPropsOrArray struct {
	Schema      *jsonSchemaProps  `protobuf:"1"`
	JSONSchemas []jsonSchemaProps `protobuf:"2"`
}

// MarshalJSON writes the list when there is one, as kube-apiserver does.
func (s jsonSchemaPropsOrArray) MarshalJSON() ([]byte, error) {
	if len(s.JSONSchemas) > 0 {
		return json.Marshal(s.JSONSchemas)
	}
	return json.Marshal(s.Schema)
}

// jsonSchemaPropsOrBool is additionalProperties or additionalItems: a
// schema, or whether anything is allowed.
type jsonSchemaPropsOrBool struct {
	Allows bool             `protobuf:"1"`
	Schema *jsonSchemaProps `protobuf:"2"`
}

// MarshalJSON writes the schema when there is one, else the bool.
func (s jsonSchemaPropsOrBool) MarshalJSON() ([]byte, error) {
	if s.Schema != nil {
		return json.Marshal(s.Schema)
	}
	return json.Marshal(s.Allows)
}

// jsonSchemaPropsOrStrings is a dependency: a schema or property names.
type jsonSchemaPropsOrStrings struct {
	Schema   *jsonSchemaProps `protobuf:"1"`
	Property []string         `protobuf:"2"`
}

// MarshalJSON writes the property names when there are any, else the
// schema (null when neither is set).
func (s jsonSchemaPropsOrStrings) MarshalJSON() ([]byte, error) {
	if len(s.Property) > 0 {
		return json.Marshal(s.Property)
	}
	return json.Marshal(s.Schema)
}

type externalDocumentation struct {
	Description string `json:"description,omitempty" protobuf:"1"`
	URL         string `json:"url,omitempty" protobuf:"2"`
}

type validationRule struct {
	Rule              string  `json:"rule" protobuf:"1"`
	Message           string  `json:"message,omitempty" protobuf:"2"`
	MessageExpression string  `json:"messageExpression,omitempty" protobuf:"3"`
	Reason            *string `json:"reason,omitempty" protobuf:"4"`
	FieldPath         string  `json:"fieldPath,omitempty" protobuf:"5"`
	OptionalOldSelf   *bool   `json:"optionalOldSelf,omitempty" protobuf:"6"`
}
