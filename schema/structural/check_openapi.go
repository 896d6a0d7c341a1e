package structural

import (
	"strings"

	"github.com/apikit-dev/apikit/meta"
)

// openAPIContext is what the OpenAPI walk of a CRD schema knows of where it
// is, as apiextensions-apiserver's specStandardValidatorV3 does.
type openAPIContext struct {
	// forbidDefaults, when set, is why a default may not be set here.
	forbidDefaults string
	insideMeta     bool
}

// openAPITypes are the types a CRD schema may name.
var openAPITypes = []string{"array", "boolean", "integer", "number", "object", "string"}

// unsupported are the OpenAPI fields a CRD schema may not use, with
// kube-apiserver's message for each.
var unsupported = []struct{ key, msg string }{
	{"id", "id is not supported"},
	{"additionalItems", "additionalItems is not supported"},
	{"patternProperties", "patternProperties is not supported"},
	{"definitions", "definitions is not supported"},
	{"dependencies", "dependencies is not supported"},
	{"$ref", "$ref is not supported"},
}

// statesSomething is how kube-apiserver tells an unsupported field is
// set: an id or $ref that is not empty, patternProperties or definitions
// with entries, additionalItems or dependencies at all.
func statesSomething(key string, v any) bool {
	switch key {
	case "id":
		s, _ := v.(string)
		return s != ""
	case "$schema":
		s, _ := v.(string)
		return s != ""
	case "patternProperties", "definitions", "dependencies":
		m, _ := v.(map[string]any)
		return len(m) > 0
	}
	return v != nil
}

// notStructural returns why kube-apiserver cannot read a schema as a
// structural schema at all (NewStructural's error), or "": then only the
// OpenAPI rules' errors are reported, or this one when there are none.
func notStructural(m map[string]any) string {
	if m == nil {
		return ""
	}
	for _, u := range []struct{ key, name string }{
		{"id", "id"}, {"$schema", "schema"}, {"$ref", "$ref"}, {"patternProperties", "patternProperties"},
		{"dependencies", "dependencies"}, {"additionalItems", "additionalItems"}, {"definitions", "definitions"},
	} {
		if v, ok := m[u.key]; ok && statesSomething(u.key, v) {
			return "OpenAPIV3Schema '" + u.name + "' is not supported"
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		l, _ := m[k].([]any)
		for _, e := range l {
			if em, _ := e.(map[string]any); notStructural(em) != "" {
				return notStructural(em)
			}
		}
	}
	if why := notStructural(obj(m, "not")); why != "" {
		return why
	}
	if v, ok := m["x-kubernetes-preserve-unknown-fields"].(bool); ok && !v {
		return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
	}
	if _, ok := m["items"].([]any); ok {
		return "OpenAPIV3Schema 'items' must be a schema, but is an array"
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if why := notStructural(obj(m, k)); why != "" {
			return why
		}
	}
	for _, k := range sortedProps(m) {
		if pm, _ := obj(m, "properties")[k].(map[string]any); notStructural(pm) != "" {
			return notStructural(pm)
		}
	}
	return ""
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// checkOpenAPI is apiextensions-apiserver's
// ValidateCustomResourceDefinitionOpenAPISchema without the CEL rules'
// compilation (package cel's): unsupported fields, where defaults may be,
// uniqueItems, additionalProperties beside properties, and the
// x-kubernetes-* extensions' combinations, walked in kube's order.
func checkOpenAPI(m map[string]any, p *meta.Path, ctx openAPIContext, isRoot bool) meta.FieldErrors {
	if m == nil {
		return nil
	}
	var errs meta.FieldErrors
	typ, _ := m["type"].(string)
	if typ != "" && !containsString(openAPITypes, typ) {
		errs = append(errs, meta.NotSupported(p.Child("type"), typ, openAPITypes))
	}
	if _, ok := m["default"]; ok && ctx.forbidDefaults != "" {
		errs = append(errs, meta.Forbidden(p.Child("default"), "must not be set "+ctx.forbidDefaults))
	}
	for _, u := range unsupported {
		if v, ok := m[u.key]; ok && statesSomething(u.key, v) {
			errs = append(errs, meta.Forbidden(p.Child(u.key), u.msg))
		}
	}
	if typ == "null" {
		errs = append(errs, meta.Forbidden(p.Child("type"), "type cannot be set to null, use nullable as an alternative"))
	}
	if _, ok := m["items"].([]any); ok {
		errs = append(errs, meta.Forbidden(p.Child("items"), "items must be a schema object and not an array"))
	}
	if ctx.insideMeta && flag(m, "x-kubernetes-embedded-resource") {
		errs = append(errs, meta.Forbidden(p.Child("x-kubernetes-embedded-resource"), "must not be used inside of resource meta"))
	}
	if flag(m, "uniqueItems") {
		errs = append(errs, meta.Forbidden(p.Child("uniqueItems"), "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
	}
	props := obj(m, "properties")
	if ap, ok := m["additionalProperties"]; ok {
		apSchema, isSchema := ap.(map[string]any)
		if allows, isBool := ap.(bool); len(props) != 0 && (isSchema || (isBool && !allows)) {
			errs = append(errs, meta.Forbidden(p.Child("additionalProperties"), "additionalProperties and properties are mutual exclusive"))
		}
		sub := ctx
		if ctx.insideMeta {
			sub.forbidDefaults = "inside additionalProperties applying to object metadata"
		}
		errs = append(errs, checkOpenAPI(apSchema, p.Child("additionalProperties"), sub, false)...)
	}
	embedded := flag(m, "x-kubernetes-embedded-resource")
	for _, k := range sortedKeys(props) {
		sub := ctx
		if (isRoot || embedded) && (k == "metadata" || k == "kind" || k == "apiVersion") {
			sub.insideMeta = true
			if isRoot {
				sub.forbidDefaults = "in top-level " + k
			}
		}
		pm, _ := props[k].(map[string]any)
		errs = append(errs, checkOpenAPI(pm, p.Child("properties").Key(k), sub, false)...)
	}
	errs = append(errs, checkOpenAPI(obj(m, "not"), p.Child("not"), ctx, false)...)
	for _, key := range []string{"allOf", "oneOf", "anyOf"} {
		l, _ := m[key].([]any)
		for i, e := range l {
			em, _ := e.(map[string]any)
			errs = append(errs, checkOpenAPI(em, p.Child(key).Index(i), ctx, false)...)
		}
	}
	items := obj(m, "items")
	errs = append(errs, checkOpenAPI(items, p.Child("items"), ctx, false)...)
	if v, ok := m["x-kubernetes-preserve-unknown-fields"].(bool); ok && !v {
		errs = append(errs, meta.Invalid(p.Child("x-kubernetes-preserve-unknown-fields"), false, "must be true or undefined"))
	}
	errs = append(errs, checkMergeExtensions(m, typ, items, p)...)
	errs = append(errs, checkValidationRules(m, p)...)
	return errs
}

// checkMergeExtensions checks x-kubernetes-map-type, -list-type and
// -list-map-keys against the node's type and items.
func checkMergeExtensions(m map[string]any, typ string, items map[string]any, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	mapType, hasMapType := m["x-kubernetes-map-type"].(string)
	if hasMapType && typ != "object" {
		errs = append(errs, typeMustBe(p, typ, "object", "x-kubernetes-map-type is specified"))
	}
	if hasMapType && mapType != "atomic" && mapType != "granular" {
		errs = append(errs, meta.NotSupported(p.Child("x-kubernetes-map-type"), mapType, []string{"atomic", "granular"}))
	}
	listType, hasListType := m["x-kubernetes-list-type"].(string)
	switch {
	case hasListType && typ != "array":
		errs = append(errs, typeMustBe(p, typ, "array", "x-kubernetes-list-type is specified"))
	case listType == "set" && items != nil:
		switch str(items, "type") {
		case "array":
			if lt, ok := items["x-kubernetes-list-type"].(string); ok && lt != "atomic" {
				errs = append(errs, meta.Invalid(p.Child("items").Child("x-kubernetes-list-type"), lt, "must be atomic as item of a list with x-kubernetes-list-type=set"))
			}
		case "object":
			if mt, _ := items["x-kubernetes-map-type"].(string); mt != "atomic" {
				errs = append(errs, meta.Invalid(p.Child("items").Child("x-kubernetes-map-type"), nil, "must be atomic as item of a list with x-kubernetes-list-type=set"))
			}
		}
	}
	if hasListType && listType != "atomic" && listType != "set" && listType != "map" {
		errs = append(errs, meta.NotSupported(p.Child("x-kubernetes-list-type"), listType, []string{"atomic", "set", "map"}))
	}
	keysRaw, _ := m["x-kubernetes-list-map-keys"].([]any)
	var keys []string
	for _, k := range keysRaw {
		if s, ok := k.(string); ok {
			keys = append(keys, s)
		}
	}
	if len(keysRaw) > 0 {
		if !hasListType {
			errs = append(errs, meta.Required(p.Child("x-kubernetes-list-type"), "must be map if x-kubernetes-list-map-keys is non-empty"))
		} else if listType != "map" {
			errs = append(errs, meta.Invalid(p.Child("x-kubernetes-list-type"), listType, "must be map if x-kubernetes-list-map-keys is non-empty"))
		}
	}
	if listType == "map" {
		errs = append(errs, checkListMap(keys, items, p)...)
	}
	if (listType == "set" || listType == "map") && items != nil {
		errs = append(errs, checkListItems(listType, keys, items, p)...)
	}
	return errs
}

func typeMustBe(p *meta.Path, typ, want, because string) *meta.FieldError {
	if typ == "" {
		return meta.Required(p.Child("type"), "must be "+want+" if "+because)
	}
	return meta.Invalid(p.Child("type"), typ, "must be "+want+" if "+because)
}

// checkListMap checks a map list's keys and items.
func checkListMap(keys []string, items map[string]any, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if len(keys) == 0 {
		errs = append(errs, meta.Required(p.Child("x-kubernetes-list-map-keys"), "must not be empty if x-kubernetes-list-type is map"))
	}
	if items == nil {
		return append(errs, meta.Required(p.Child("items"), "must have a schema if x-kubernetes-list-type is map"))
	}
	itemType := str(items, "type")
	if itemType != "object" {
		return append(errs, meta.Invalid(p.Child("items").Child("type"), itemType, "must be object if parent array's x-kubernetes-list-type is map"))
	}
	props := obj(items, "properties")
	seen := map[string]bool{}
	for _, k := range keys {
		if km, ok := props[k].(map[string]any); ok {
			if t := str(km, "type"); t == "array" || t == "object" {
				errs = append(errs, meta.Invalid(p.Child("items").Child("properties").Key(k).Child("type"), itemType, "must be a scalar type if parent array's x-kubernetes-list-type is map"))
			}
		} else {
			errs = append(errs, meta.Invalid(p.Child("x-kubernetes-list-map-keys"), keys, "entries must all be names of item properties"))
		}
		if seen[k] {
			errs = append(errs, meta.Invalid(p.Child("x-kubernetes-list-map-keys"), keys, "must not contain duplicate entries"))
		}
		seen[k] = true
	}
	return errs
}

// checkListItems is kube's map and set list rule: items not nullable, and
// each map key required or defaulted and not nullable.
func checkListItems(listType string, keys []string, items map[string]any, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if flag(items, "nullable") {
		errs = append(errs, meta.Forbidden(p.Child("items").Child("nullable"), "cannot be nullable when x-kubernetes-list-type is "+listType))
	}
	if listType != "map" {
		return errs
	}
	required := map[string]bool{}
	reqList, _ := items["required"].([]any)
	for _, r := range reqList {
		if s, ok := r.(string); ok {
			required[s] = true
		}
	}
	props := obj(items, "properties")
	for _, k := range keys {
		km, ok := props[k].(map[string]any)
		if !ok {
			continue
		}
		kp := p.Child("items").Child("properties").Key(k)
		if _, hasDefault := km["default"]; !required[k] && !hasDefault {
			errs = append(errs, meta.Required(kp.Child("default"), "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"))
		}
		if flag(km, "nullable") {
			errs = append(errs, meta.Forbidden(kp.Child("nullable"), "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
		}
	}
	return errs
}

// validationReasons are the reasons an x-kubernetes-validations rule may
// give, sorted as kube-apiserver lists them.
var validationReasons = []string{"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"}

// checkValidationRules is the static part of kube-apiserver's check of
// x-kubernetes-validations; compiling the rules, their cost and fieldPath
// resolution are package cel's.
func checkValidationRules(m map[string]any, p *meta.Path) meta.FieldErrors {
	rules, _ := m["x-kubernetes-validations"].([]any)
	var errs meta.FieldErrors
	for i, r := range rules {
		rule, _ := r.(map[string]any)
		rp := p.Child("x-kubernetes-validations").Index(i)
		expr, msg := str(rule, "rule"), str(rule, "message")
		trimmedRule, trimmedMsg := strings.TrimSpace(expr), strings.TrimSpace(msg)
		switch {
		case trimmedRule == "":
			errs = append(errs, meta.Required(rp.Child("rule"), "rule is not specified"))
		case msg != "" && trimmedMsg == "":
			errs = append(errs, meta.Invalid(rp.Child("message"), msg, "must be non-empty if specified"))
		case strings.ContainsAny(trimmedMsg, "\n\r"):
			errs = append(errs, meta.Invalid(rp.Child("message"), msg, "must not contain line breaks"))
		case strings.ContainsAny(trimmedRule, "\n\r") && trimmedMsg == "":
			errs = append(errs, meta.Required(rp.Child("message"), "message must be specified if rule contains line breaks"))
		}
		if me := str(rule, "messageExpression"); me != "" && strings.TrimSpace(me) == "" {
			errs = append(errs, meta.Required(rp.Child("messageExpression"), "messageExpression must be non-empty if specified"))
		}
		if reason, ok := rule["reason"].(string); ok && !containsString(validationReasons, reason) {
			errs = append(errs, meta.NotSupported(rp.Child("reason"), reason, validationReasons))
		}
		fp := str(rule, "fieldPath")
		if fp != "" && strings.TrimSpace(fp) == "" {
			errs = append(errs, meta.Invalid(rp.Child("fieldPath"), fp, "must be non-empty if specified"))
		}
		if strings.ContainsAny(fp, "\n\r") {
			errs = append(errs, meta.Invalid(rp.Child("fieldPath"), fp, "must not contain line breaks"))
		}
	}
	return errs
}
