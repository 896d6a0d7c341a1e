package schema

import (
	"encoding/json"
	"fmt"
	"sort"
)

// FromOpenAPIV3 reads a structural schema written as OpenAPI v3, the form
// of a CustomResourceDefinition's openAPIV3Schema, with Kubernetes'
// extensions: x-kubernetes-list-type, x-kubernetes-list-map-keys,
// x-kubernetes-map-type and x-kubernetes-preserve-unknown-fields. A
// schema that is not structural (a $ref, allOf/anyOf/oneOf carrying types,
// a list without items) is refused with the path of what is wrong. File the
// result in a Set with Add.
func FromOpenAPIV3(data []byte) (*Schema, error) {
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("schema: decoding an OpenAPI v3 schema: %w", err)
	}
	return fromOpenAPI(raw, "", false)
}

// fromOpenAPI reads one node. Inside allOf/anyOf/oneOf/not (junctor) a
// node holds value validations only: it states no type, so the checks of
// a node's type and merge markers are for the nodes outside.
func fromOpenAPI(m map[string]any, path string, junctor bool) (*Schema, error) {
	at := path
	if at == "" {
		at = "<root>"
	}
	if _, ok := m["$ref"]; ok {
		return nil, fmt.Errorf("schema: %s: $ref is not allowed in a structural schema", at)
	}
	n := &Schema{}
	str := func(key string) (string, error) {
		v, ok := m[key]
		if !ok {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("schema: %s: %s must be a string", at, key)
		}
		return s, nil
	}
	var err error
	if n.Type, err = str("type"); err != nil {
		return nil, err
	}
	switch n.Type {
	case "", "object", "array", "string", "integer", "number", "boolean":
	default:
		return nil, fmt.Errorf("schema: %s: unknown type %q", at, n.Type)
	}
	if n.Format, err = str("format"); err != nil {
		return nil, err
	}
	if n.Description, err = str("description"); err != nil {
		return nil, err
	}
	lt, err := str("x-kubernetes-list-type")
	if err != nil {
		return nil, err
	}
	mt, err := str("x-kubernetes-map-type")
	if err != nil {
		return nil, err
	}
	n.ListType, n.MapType = ListType(lt), MapType(mt)
	n.Default, n.Enum = m["default"], asList(m["enum"])
	n.Nullable, _ = m["nullable"].(bool)
	n.Unknown, _ = m["x-kubernetes-preserve-unknown-fields"].(bool)
	for key, to := range map[string]**float64{"minimum": &n.Minimum, "maximum": &n.Maximum} {
		if v, ok := m[key].(float64); ok {
			*to = &v
		}
	}
	if err := readValueValidations(m, n, path, at); err != nil {
		return nil, err
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf", "not"} {
		if _, ok := m[key]; ok && !junctor && n.Type == "" && !n.Unknown && !n.IntOrString {
			return nil, fmt.Errorf("schema: %s: %s without a type is not structural", at, key)
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			pm, ok := props[name].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("schema: %s.%s: a property must be a schema", path, name)
			}
			p, err := fromOpenAPI(pm, path+"."+name, junctor)
			if err != nil {
				return nil, err
			}
			n.Properties = append(n.Properties, Property{Name: name, Schema: p})
		}
	}
	for _, r := range asList(m["required"]) {
		if s, ok := r.(string); ok {
			n.Required = append(n.Required, s)
		}
	}
	switch ap := m["additionalProperties"].(type) {
	case map[string]any:
		if n.AdditionalProperties, err = fromOpenAPI(ap, path+"[*]", junctor); err != nil {
			return nil, err
		}
	case bool:
		n.AdditionalPropertiesAllowed = &ap
		if ap {
			n.Unknown = true
		}
	}
	if items, ok := m["items"].(map[string]any); ok {
		if n.Items, err = fromOpenAPI(items, path+"[*]", junctor); err != nil {
			return nil, err
		}
	}
	if !junctor && n.Type == "array" && n.Items == nil {
		return nil, fmt.Errorf("schema: %s: a list needs items", at)
	}
	for _, k := range asList(m["x-kubernetes-list-map-keys"]) {
		if s, ok := k.(string); ok {
			n.ListMapKeys = append(n.ListMapKeys, s)
		}
	}
	if junctor {
		return n, nil
	}
	if err := checkMerge(n); err != nil {
		return nil, fmt.Errorf("schema: %s: %w", at, err)
	}
	return n, nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// checkMerge checks a node's list and map types as the struct tags are
// checked: map lists need keys, keys need map lists, each fits its node.
func checkMerge(n *Schema) error {
	switch n.ListType {
	case "", ListAtomic, ListSet, ListMap:
	default:
		return fmt.Errorf("x-kubernetes-list-type %q is not atomic, set or map", n.ListType)
	}
	switch n.MapType {
	case "", MapAtomic, MapGranular:
	default:
		return fmt.Errorf("x-kubernetes-map-type %q is not atomic or granular", n.MapType)
	}
	if n.ListType != "" && n.Type != "array" {
		return fmt.Errorf("x-kubernetes-list-type is for lists, not %s", describeType(n))
	}
	if n.ListType == ListMap && len(n.ListMapKeys) == 0 {
		return fmt.Errorf("x-kubernetes-list-type map needs x-kubernetes-list-map-keys")
	}
	if len(n.ListMapKeys) > 0 && n.ListType != ListMap {
		return fmt.Errorf("x-kubernetes-list-map-keys needs x-kubernetes-list-type map")
	}
	if n.ListType == ListMap {
		for _, k := range n.ListMapKeys {
			if n.Items == nil {
				break
			}
			if _, ok := n.Items.Property(k); !ok {
				return fmt.Errorf("x-kubernetes-list-map-keys names %q, which the items do not have", k)
			}
		}
	}
	if n.MapType != "" && n.Type != "object" {
		return fmt.Errorf("x-kubernetes-map-type is for objects, not %s", describeType(n))
	}
	return nil
}

// readValueValidations reads the value validations and the Kubernetes
// extensions other than the merge markers into n.
func readValueValidations(m map[string]any, n *Schema, path, at string) error {
	n.ExclusiveMinimum, _ = m["exclusiveMinimum"].(bool)
	n.ExclusiveMaximum, _ = m["exclusiveMaximum"].(bool)
	n.UniqueItems, _ = m["uniqueItems"].(bool)
	n.IntOrString, _ = m["x-kubernetes-int-or-string"].(bool)
	n.EmbeddedResource, _ = m["x-kubernetes-embedded-resource"].(bool)
	if v, ok := m["multipleOf"].(float64); ok {
		n.MultipleOf = &v
	}
	if v, ok := m["pattern"]; ok {
		p, ok := v.(string)
		if !ok {
			return fmt.Errorf("schema: %s: pattern must be a string", at)
		}
		n.Pattern = p
	}
	for key, to := range map[string]**int64{
		"minLength": &n.MinLength, "maxLength": &n.MaxLength,
		"minItems": &n.MinItems, "maxItems": &n.MaxItems,
		"minProperties": &n.MinProperties, "maxProperties": &n.MaxProperties,
	} {
		v, ok := m[key]
		if !ok {
			continue
		}
		f, ok := v.(float64)
		if !ok || f < 0 || f != float64(int64(f)) {
			return fmt.Errorf("schema: %s: %s must be a non-negative integer", at, key)
		}
		i := int64(f)
		*to = &i
	}
	for key, to := range map[string]*[]*Schema{"allOf": &n.AllOf, "anyOf": &n.AnyOf, "oneOf": &n.OneOf} {
		for i, sub := range asList(m[key]) {
			sm, ok := sub.(map[string]any)
			if !ok {
				return fmt.Errorf("schema: %s: %s[%d] must be a schema", at, key, i)
			}
			s, err := fromOpenAPI(sm, fmt.Sprintf("%s.%s[%d]", path, key, i), true)
			if err != nil {
				return err
			}
			*to = append(*to, s)
		}
	}
	if not, ok := m["not"].(map[string]any); ok {
		s, err := fromOpenAPI(not, path+".not", true)
		if err != nil {
			return err
		}
		n.Not = s
	}
	if v, ok := m["x-kubernetes-validations"]; ok {
		raw, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(raw, &n.Validations)
		}
		if err != nil {
			return fmt.Errorf("schema: %s: x-kubernetes-validations: %w", at, err)
		}
	}
	return nil
}
