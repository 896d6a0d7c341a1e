package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/go-openapi/spec"
)

// The OpenAPI 3.0 documents are converted from the Swagger 2.0 one, as
// kube-apiserver's are from the same definitions: go-restful-openapi
// writes only Swagger 2.0. Only what a converted document can hold is
// modelled; schemas stay generic JSON values once their references point
// at #/components/schemas/.

// document3 is an OpenAPI 3.0 document: one group-version's paths and the
// schemas they reach.
type document3 struct {
	OpenAPI    string                `json:"openapi"`
	Info       info3                 `json:"info"`
	Paths      map[string]*pathItem3 `json:"paths"`
	Components components3           `json:"components"`
}

type info3 struct {
	Title   string `json:"title"`
	Version string `json:"version"`
}

type components3 struct {
	Schemas map[string]any `json:"schemas"`
}

type pathItem3 struct {
	Get     *operation3 `json:"get,omitempty"`
	Put     *operation3 `json:"put,omitempty"`
	Post    *operation3 `json:"post,omitempty"`
	Delete  *operation3 `json:"delete,omitempty"`
	Options *operation3 `json:"options,omitempty"`
	Head    *operation3 `json:"head,omitempty"`
	Patch   *operation3 `json:"patch,omitempty"`
}

type operation3 struct {
	Tags        []string             `json:"tags,omitempty"`
	Summary     string               `json:"summary,omitempty"`
	Description string               `json:"description,omitempty"`
	OperationID string               `json:"operationId,omitempty"`
	Parameters  []parameter3         `json:"parameters,omitempty"`
	RequestBody *requestBody3        `json:"requestBody,omitempty"`
	Responses   map[string]response3 `json:"responses"`
	Deprecated  bool                 `json:"deprecated,omitempty"`
	// Extensions (x-kubernetes-action, x-kubernetes-group-version-kind)
	// are written inline, beside the fields above.
	Extensions map[string]any `json:"-"`
}

// MarshalJSON writes the extensions inline, as OpenAPI wants them.
func (o operation3) MarshalJSON() ([]byte, error) {
	type plain operation3
	b, err := json.Marshal(plain(o))
	if err != nil || len(o.Extensions) == 0 {
		return b, err
	}
	ext, err := json.Marshal(o.Extensions)
	if err != nil {
		return nil, err
	}
	// Both are non-empty objects (responses is always written): splice.
	out := make([]byte, 0, len(b)+len(ext))
	out = append(out, b[:len(b)-1]...)
	out = append(out, ',')
	return append(out, ext[1:]...), nil
}

type parameter3 struct {
	Name            string `json:"name"`
	In              string `json:"in"`
	Description     string `json:"description,omitempty"`
	Required        bool   `json:"required,omitempty"`
	AllowEmptyValue bool   `json:"allowEmptyValue,omitempty"`
	Style           string `json:"style,omitempty"`
	Explode         *bool  `json:"explode,omitempty"`
	Schema          any    `json:"schema,omitempty"`
}

type requestBody3 struct {
	Description string                `json:"description,omitempty"`
	Content     map[string]mediaType3 `json:"content"`
	Required    bool                  `json:"required,omitempty"`
}

type mediaType3 struct {
	Schema any `json:"schema,omitempty"`
}

type response3 struct {
	Description string                `json:"description"`
	Content     map[string]mediaType3 `json:"content,omitempty"`
}

const componentsPrefix = "#/components/schemas/"

// convertSchema turns a Swagger 2.0 schema into an OpenAPI 3.0 one.
func convertSchema(s *spec.Schema) (any, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding schema: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep integer defaults and bounds exact
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding schema: %w", err)
	}
	return rewriteSchema(v), nil
}

// rewriteSchema points references at #/components/schemas/ and, where a
// reference has siblings (a description, say), wraps it in allOf: in
// OpenAPI 3.0 a $ref replaces its whole object, and kube-apiserver's
// documents (and kubectl explain) use the allOf form.
func rewriteSchema(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for k, child := range m {
		switch k {
		case "properties", "patternProperties":
			if props, ok := child.(map[string]any); ok {
				for name, p := range props {
					props[name] = rewriteSchema(p)
				}
			}
		case "items", "additionalProperties", "not":
			if list, ok := child.([]any); ok {
				for i := range list {
					list[i] = rewriteSchema(list[i])
				}
			} else {
				m[k] = rewriteSchema(child)
			}
		case "allOf", "anyOf", "oneOf":
			if list, ok := child.([]any); ok {
				for i := range list {
					list[i] = rewriteSchema(list[i])
				}
			}
		}
	}
	if nullable, ok := m["x-nullable"]; ok {
		delete(m, "x-nullable")
		m["nullable"] = nullable
	}
	ref, ok := m["$ref"].(string)
	if !ok {
		return m
	}
	ref = componentsPrefix + strings.TrimPrefix(ref, "#/definitions/")
	if len(m) == 1 {
		m["$ref"] = ref
		return m
	}
	delete(m, "$ref")
	allOf, _ := m["allOf"].([]any)
	m["allOf"] = append([]any{map[string]any{"$ref": ref}}, allOf...)
	return m
}

// collectRefs adds the component names v refers to.
func collectRefs(v any, into map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"].(string); ok {
			if name, ok := strings.CutPrefix(ref, componentsPrefix); ok {
				into[name] = true
			}
		}
		for _, c := range t {
			collectRefs(c, into)
		}
	case []any:
		for _, c := range t {
			collectRefs(c, into)
		}
	}
}

// converter turns the Swagger 2.0 document into per-group-version OpenAPI
// 3.0 documents, converting each definition once.
type converter struct {
	sw      *spec.Swagger
	schemas map[string]any
}

func newConverter(sw *spec.Swagger) (*converter, error) {
	c := &converter{sw: sw, schemas: make(map[string]any, len(sw.Definitions))}
	for name, def := range sw.Definitions {
		s, err := convertSchema(&def)
		if err != nil {
			return nil, fmt.Errorf("openapi: definition %s: %w", name, err)
		}
		c.schemas[name] = s
	}
	return c, nil
}

// document builds the document of paths, with the schemas they reach.
func (c *converter) document(info info3, paths []string) (*document3, error) {
	doc := &document3{OpenAPI: "3.0.0", Info: info, Paths: map[string]*pathItem3{},
		Components: components3{Schemas: map[string]any{}}}
	refs := map[string]bool{}
	for _, p := range paths {
		item, ok := c.sw.Paths.Paths[p]
		if !ok {
			return nil, fmt.Errorf("openapi: path %s is not in the document", p)
		}
		out := &pathItem3{}
		for _, m := range []struct {
			in  *spec.Operation
			out **operation3
		}{
			{item.Get, &out.Get}, {item.Put, &out.Put}, {item.Post, &out.Post}, {item.Delete, &out.Delete},
			{item.Options, &out.Options}, {item.Head, &out.Head}, {item.Patch, &out.Patch},
		} {
			if m.in == nil {
				continue
			}
			op, err := c.operation(m.in)
			if err != nil {
				return nil, fmt.Errorf("openapi: %s: %w", p, err)
			}
			*m.out = op
			for _, prm := range op.Parameters {
				collectRefs(prm.Schema, refs)
			}
			if op.RequestBody != nil {
				for _, mt := range op.RequestBody.Content {
					collectRefs(mt.Schema, refs)
				}
			}
			for _, r := range op.Responses {
				for _, mt := range r.Content {
					collectRefs(mt.Schema, refs)
				}
			}
		}
		doc.Paths[p] = out
	}
	// Add the schemas reached, and those they reach.
	queue := make([]string, 0, len(refs))
	for name := range refs {
		queue = append(queue, name)
	}
	sort.Strings(queue)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if _, done := doc.Components.Schemas[name]; done {
			continue
		}
		s, ok := c.schemas[name]
		if !ok {
			return nil, fmt.Errorf("openapi: schema %s is referenced but not defined", name)
		}
		doc.Components.Schemas[name] = s
		next := map[string]bool{}
		collectRefs(s, next)
		for n := range next {
			if _, done := doc.Components.Schemas[n]; !done {
				queue = append(queue, n)
			}
		}
	}
	return doc, nil
}

// operation converts one operation: non-body parameters get a schema, the
// body parameter becomes the request body in each consumed media type, and
// response schemas go under each produced media type.
func (c *converter) operation(op *spec.Operation) (*operation3, error) {
	out := &operation3{
		Tags: op.Tags, Summary: op.Summary, Description: op.Description, OperationID: op.ID,
		Deprecated: op.Deprecated, Responses: map[string]response3{},
	}
	if len(op.Extensions) > 0 {
		out.Extensions = make(map[string]any, len(op.Extensions))
		for k, v := range op.Extensions {
			out.Extensions[k] = v
		}
	}
	consumes := op.Consumes
	if len(consumes) == 0 {
		consumes = c.sw.Consumes
	}
	if len(consumes) == 0 {
		consumes = []string{"*/*"}
	}
	produces := op.Produces
	if len(produces) == 0 {
		produces = c.sw.Produces
	}
	if len(produces) == 0 {
		produces = []string{"application/json"}
	}
	for i := range op.Parameters {
		p := &op.Parameters[i]
		if p.In == "body" {
			s, err := convertSchema(p.Schema)
			if err != nil {
				return nil, fmt.Errorf("body of %s: %w", op.ID, err)
			}
			rb := &requestBody3{Description: p.Description, Required: p.Required, Content: map[string]mediaType3{}}
			for _, mt := range consumes {
				rb.Content[mt] = mediaType3{Schema: s}
			}
			out.RequestBody = rb
			continue
		}
		out.Parameters = append(out.Parameters, convertParameter(p))
	}
	if op.Responses != nil {
		for code, r := range op.Responses.StatusCodeResponses {
			resp, err := convertResponse(&r, produces)
			if err != nil {
				return nil, fmt.Errorf("response %d of %s: %w", code, op.ID, err)
			}
			out.Responses[strconv.Itoa(code)] = resp
		}
		if d := op.Responses.Default; d != nil {
			resp, err := convertResponse(d, produces)
			if err != nil {
				return nil, fmt.Errorf("default response of %s: %w", op.ID, err)
			}
			out.Responses["default"] = resp
		}
	}
	if len(out.Responses) == 0 {
		out.Responses["200"] = response3{Description: http.StatusText(http.StatusOK)}
	}
	return out, nil
}

func convertResponse(r *spec.Response, produces []string) (response3, error) {
	out := response3{Description: r.Description}
	if r.Schema == nil {
		return out, nil
	}
	s, err := convertSchema(r.Schema)
	if err != nil {
		return out, err
	}
	out.Content = make(map[string]mediaType3, len(produces))
	for _, mt := range produces {
		out.Content[mt] = mediaType3{Schema: s}
	}
	return out, nil
}

// convertParameter moves a query, path or header parameter's type into a
// schema, and its collection format into style and explode.
func convertParameter(p *spec.Parameter) parameter3 {
	out := parameter3{Name: p.Name, In: p.In, Description: p.Description,
		Required: p.Required || p.In == "path", AllowEmptyValue: p.AllowEmptyValue}
	s := simpleSchema(&p.SimpleSchema, &p.CommonValidations)
	if p.Type == "array" {
		explode := p.CollectionFormat == "multi"
		out.Explode = &explode
		switch p.CollectionFormat {
		case "ssv":
			out.Style = "spaceDelimited"
		case "pipes":
			out.Style = "pipeDelimited"
		default:
			out.Style = "form"
		}
		if p.In == "path" || p.In == "header" {
			out.Style = "simple"
		}
	}
	if len(s) > 0 {
		out.Schema = s
	}
	return out
}

// simpleSchema is the schema of a Swagger 2.0 non-body parameter or items.
func simpleSchema(ss *spec.SimpleSchema, v *spec.CommonValidations) map[string]any {
	s := map[string]any{}
	if ss.Type != "" {
		s["type"] = ss.Type
	}
	if ss.Format != "" {
		s["format"] = ss.Format
	}
	if ss.Default != nil {
		s["default"] = ss.Default
	}
	if ss.Items != nil {
		s["items"] = simpleSchema(&ss.Items.SimpleSchema, &ss.Items.CommonValidations)
	}
	if ss.Nullable {
		s["nullable"] = true
	}
	if v.Maximum != nil {
		s["maximum"] = *v.Maximum
		if v.ExclusiveMaximum {
			s["exclusiveMaximum"] = true
		}
	}
	if v.Minimum != nil {
		s["minimum"] = *v.Minimum
		if v.ExclusiveMinimum {
			s["exclusiveMinimum"] = true
		}
	}
	if v.MaxLength != nil {
		s["maxLength"] = *v.MaxLength
	}
	if v.MinLength != nil {
		s["minLength"] = *v.MinLength
	}
	if v.Pattern != "" {
		s["pattern"] = v.Pattern
	}
	if v.MaxItems != nil {
		s["maxItems"] = *v.MaxItems
	}
	if v.MinItems != nil {
		s["minItems"] = *v.MinItems
	}
	if v.UniqueItems {
		s["uniqueItems"] = true
	}
	if len(v.Enum) > 0 {
		s["enum"] = v.Enum
	}
	return s
}
