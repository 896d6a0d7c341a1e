package extensions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
	"github.com/apikit-dev/apikit/server/endpoints"
)

// build makes what serving crd's custom resources needs: per served
// version a registry.Store over the resource's storage (each version's
// store has its own schema, columns and selectable fields; all read and
// write objects in the storage version), its routes and their handler.
func (s *Server) build(crd *CustomResourceDefinition) (*servedCRD, error) {
	names := crd.Status.AcceptedNames
	gr := meta.GroupResource{Group: crd.Spec.Group, Resource: names.Plural}
	st, err := s.storage.For(gr)
	if err != nil {
		return nil, fmt.Errorf("extensions: storage for %s: %w", gr, err)
	}
	sc := &servedCRD{crd: crd, terminating: crd.Status.IsTrue(Terminating), versions: map[string]*servedVersion{}}
	storageVersion := crd.Spec.StorageVersion()
	type pending struct {
		v      *CustomResourceDefinitionVersion
		res    registry.Resource
		set    *schema.Set
		schema *schema.Schema
	}
	var all []pending
	var storageStrategy *crStrategy
	var conv *webhookConverter
	if c := crd.Spec.Conversion; c != nil && c.Strategy == WebhookConverter && c.Webhook != nil && c.Webhook.ClientConfig != nil {
		conv = &webhookConverter{group: crd.Spec.Group, kind: names.Kind, listKind: names.ListKind, cc: *c.Webhook.ClientConfig,
			resolver: s.resolver, clients: &s.clients, timeout: s.conversionTimeout}
		for i := range crd.Spec.Versions {
			if v := &crd.Spec.Versions[i]; v.Name == storageVersion {
				if storageStrategy, _, err = versionStrategy(crd, v); err != nil {
					return nil, err
				}
			}
		}
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !v.Served {
			continue
		}
		strategy, shape, err := versionStrategy(crd, v)
		if err != nil {
			return nil, err
		}
		// With a conversion webhook, a version other than the storage
		// version is kept by a store of storage-version objects (pruned,
		// defaulted and validated by that version's schema after
		// conversion); webhookVersion converts what crosses.
		// The storage version too is converted when objects may be stored
		// in another version.
		converted := conv != nil && storageStrategy != nil &&
			(v.Name != storageVersion || slices.ContainsFunc(crd.Status.StoredVersions, func(s string) bool { return s != storageVersion }))
		storeStrategy := strategy
		if converted {
			storeStrategy = storageStrategy
		}
		var status bool
		if v.Subresources != nil && v.Subresources.Status != nil {
			status = true
		}
		store, err := registry.NewStore(registry.Options[*Object]{
			Resource:          gr,
			Kind:              names.Kind,
			SingularName:      names.Singular,
			ShortNames:        names.ShortNames,
			Categories:        names.Categories,
			NamespaceScoped:   crd.Spec.Scope == NamespaceScoped,
			StorageVersion:    storageVersion,
			Strategy:          storeStrategy,
			Storage:           st,
			StatusSubresource: status,
			// kube's custom resource validator checks the metadata
			// before the schema, in one error.
			MetadataErrorsFirst: true,
			NoAgeColumn:         true,
			Columns:             printerColumns(v.AdditionalPrinterColumns),
			Fields:              selectableFields(v.SelectableFields),
		})
		if err != nil {
			return nil, err
		}
		res, err := registry.ServeVersion(store, v.Name, registry.Conversion[*Object, *Object]{
			ToStorage: func(o *Object) (*Object, error) { return o, nil },
			FromStorage: func(o *Object) (*Object, error) {
				// An object stored in another version is defaulted once
				// converted (webhookVersion), not by this schema.
				if conv != nil && o.storedVersion(crd.Spec.Group, storageVersion) != storageVersion {
					return o.deepCopy(), nil
				}
				return storeStrategy.fromStorage(o)
			},
			// The CRD's revision: objects read through an older
			// version of its schema are not served from the memo.
			Epoch: crd.ResourceVersion,
		})
		if err != nil {
			return nil, err
		}
		if converted {
			res = &webhookVersion{Resource: res, conv: conv, version: v.Name, storageVersion: storageVersion,
				served: strategy, storage: storageStrategy}
		}
		res = decodingResource{Resource: res, schema: shape}
		set := schema.NewSet()
		root, err := resourceSchema(set, shape)
		if err != nil {
			return nil, err
		}
		// Server-side apply merges by a named schema.
		key := crd.Spec.Group + "/" + v.Name + "/" + names.Kind
		if err := set.Add(key, root); err != nil {
			return nil, err
		}
		root = &schema.Schema{Ref: key}
		all = append(all, pending{v: v, res: res, set: set, schema: root})
	}
	chain := s.config.Admission.Without(s.config.DisabledAdmissionPlugins...)
	for _, p := range all {
		gv := meta.GroupVersion{Group: crd.Spec.Group, Version: p.v.Name}
		ws := new(restful.WebService).Path("/apis/" + gv.String()).ApiVersion(gv.String())
		endpoints.Install(ws, &endpoints.Scope{
			Resource:            p.res,
			Schemas:             p.set,
			Schema:              p.schema,
			Admission:           chain,
			MaxRequestBodyBytes: s.config.MaxRequestBodyBytes,
			MaxObjectBytes:      s.config.MaxObjectBytes,
			MinRequestTimeout:   s.config.MinRequestTimeout,
			StopWatches:         s.GenericServer.StopWatches(),
			GarbageCollection:   s.config.GarbageCollection,
		})
		if p.v.Subresources != nil && p.v.Subresources.Scale != nil {
			maxBody := s.config.MaxRequestBodyBytes
			if maxBody <= 0 {
				maxBody = endpoints.DefaultMaxRequestBodyBytes
			}
			if err := installScale(ws, p.res, p.v.Subresources.Scale, maxBody, chain); err != nil {
				return nil, fmt.Errorf("extensions: scale of %s %s: %w", crd.Name, p.v.Name, err)
			}
		}
		h, err := routeMux(ws)
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if p.v.Schema != nil {
			raw = p.v.Schema.OpenAPIV3Schema
		}
		def, err := definition(raw, gv.WithKind(names.Kind))
		if err != nil {
			return nil, err
		}
		sc.versions[p.v.Name] = &servedVersion{resource: p.res, ws: ws, handler: h, definition: def}
	}
	return sc, nil
}

// versionStrategy reads a version's schema (any object without one) and
// compiles its CEL rules into the version's strategy.
func versionStrategy(crd *CustomResourceDefinition, v *CustomResourceDefinitionVersion) (*crStrategy, *schema.Schema, error) {
	shape := &schema.Schema{Type: "object", Unknown: true}
	if v.Schema != nil && len(v.Schema.OpenAPIV3Schema) > 0 {
		var err error
		if shape, err = schema.FromOpenAPIV3(v.Schema.OpenAPIV3Schema); err != nil {
			return nil, nil, fmt.Errorf("extensions: schema of %s %s: %w", crd.Name, v.Name, err)
		}
	}
	// The rules compiled when the CRD was written; a rule that does
	// not compile now is left out (validation reported it).
	rules, _ := cel.CompileSchema(shape, nil)
	c := &crStrategy{schema: shape, rules: rules}
	c.status, _ = shape.Property("status")
	if v.Subresources != nil && v.Subresources.Scale != nil {
		c.scale = newScalePaths(v.Subresources.Scale)
	}
	return c, shape, nil
}

// crStrategy prunes, defaults and validates custom resources by their
// version's schema (schema/structural), as kube-apiserver's custom
// resource strategy does.
type crStrategy struct {
	registry.DefaultStrategy[*Object]
	schema *schema.Schema
	// rules are the schema's x-kubernetes-validations; nil without any.
	rules *cel.Validator
	// status is the schema of .status, which alone validates a write to
	// /status; nil without one.
	status *schema.Schema
	// scale is the paths of the version's scale subresource, checked on
	// every write; nil without one.
	scale *scalePaths
}

var (
	_ registry.Defaulter[*Object]      = (*crStrategy)(nil)
	_ registry.StatusStrategy[*Object] = (*crStrategy)(nil)
)

// fromStorage is the served version's conversion from storage: objects
// are pruned and defaulted on their way out of storage as well, so that a
// default added to the schema later shows on objects stored before it, as
// kube-apiserver does. Most objects were written under the current schema
// and are unchanged by it: they are served with the stored object's values
// (both are read-only where the memo of a stored value shares them), not a
// second copy of them, which the memo would keep for every object.
func (c *crStrategy) fromStorage(o *Object) (*Object, error) {
	d := o.deepCopy()
	c.Default(d)
	if reflect.DeepEqual(d.Content, o.Content) && reflect.DeepEqual(d.Status, o.Status) {
		same := *o
		return &same, nil
	}
	return d, nil
}

// Default drops the fields the schema does not know, then fills its
// defaults; the store calls it on every write, and the served version's
// conversion on every read from storage.
func (c *crStrategy) Default(o *Object) {
	m := o.Fields()
	structural.Prune(c.schema, m, true)
	structural.Default(c.schema, m)
	o.SetFields(m)
}

// Validate checks a new object against the schema, then its CEL rules.
func (c *crStrategy) Validate(ctx context.Context, o *Object) meta.FieldErrors {
	return c.validate(ctx, o, nil)
}

// ValidateUpdate checks an updated object against the schema, then its
// CEL rules, transition rules with the old object.
func (c *crStrategy) ValidateUpdate(ctx context.Context, o, old *Object) meta.FieldErrors {
	return c.validate(ctx, o, old)
}

// validate checks a whole object in kube-apiserver's custom resource
// strategy's order: the schema's value validations, the scale
// subresource's replicas paths, then validateRest. On an update the
// schema's errors at values the update left unchanged are dropped, as
// kube-apiserver ratchets them (CRDValidationRatcheting).
func (c *crStrategy) validate(ctx context.Context, o, old *Object) meta.FieldErrors {
	value := o.Fields()
	var errs meta.FieldErrors
	if old != nil {
		errs = structural.ValidateValuesUpdate(c.schema, value, old.Fields(), nil)
	} else {
		errs = structural.ValidateValues(c.schema, value, nil)
	}
	errs = append(errs, c.validateScaleSpec(value)...)
	errs = append(errs, c.validateScaleStatus(value)...)
	errs = append(errs, structural.ValidateEmbeddedResource(c.schema, value)...)
	return c.validateRest(ctx, errs, o, value, old)
}

// ValidateStatusUpdate checks an object whose status changed: its status
// against the status schema alone (kube-apiserver's status strategy, whose
// messages name the path from .status; errors at values of the old status
// left unchanged are dropped, as kube ratchets them), then the whole object's list
// types and CEL rules; its embedded resources are not checked, as
// kube-apiserver's status strategy does not check them.
func (c *crStrategy) ValidateStatusUpdate(ctx context.Context, o, old *Object) meta.FieldErrors {
	value := o.Fields()
	var errs meta.FieldErrors
	if status, ok := value["status"]; ok {
		errs = structural.ValidateValuesUpdate(c.status, status, old.Status, meta.NewPath("status"))
	}
	errs = append(errs, c.validateScaleStatus(value)...)
	return c.validateRest(ctx, errs, o, value, old)
}

// validateRest ends a validation that found errs so far: the list types
// of the whole object, then its CEL rules. An update reports duplicates in
// set and map lists only if the old object had none, as kube-apiserver
// ratchets them. The rules run unless an error says a value has the wrong
// shape (a wrong type, a missing field, an unsupported value, too long or
// too many), as kube-apiserver's hasBlockingErr decides: the rules read
// typed values. Then one error says that some rules were not checked;
// otherwise the rules' failures join the schema's, so a client sees them
// all at once.
func (c *crStrategy) validateRest(ctx context.Context, errs meta.FieldErrors, o *Object, value map[string]any, old *Object) meta.FieldErrors {
	if lerrs := structural.ValidateListTypes(c.schema, value); len(lerrs) > 0 &&
		(old == nil || len(structural.ValidateListTypes(c.schema, old.Fields())) == 0) {
		errs = append(errs, lerrs...)
	}
	if c.rules == nil {
		return errs
	}
	if slices.ContainsFunc(errs, blocksRules) {
		return append(errs, meta.Invalid(rootPath, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
	}
	var oldValue any
	if old != nil {
		oldValue = old.Fields()
	}
	if c.rules.ReadsObjectMeta() {
		value = ruleObject(o, value)
		if old != nil {
			oldValue = ruleObject(old, oldValue.(map[string]any))
		}
	}
	res := c.rules.Validate(ctx, nil, value, oldValue)
	// kube-apiserver sends a ratcheted rule's failure as a warning.
	for _, msg := range res.Warnings {
		admission.AddWarning(ctx, msg)
	}
	return append(errs, res.Errors...)
}

// ruleObject returns fields, a map Fields made for this validation, with
// the object's apiVersion, kind and metadata added, as the CEL rules see
// a custom resource in kube-apiserver. Of metadata a rule reads only name
// and generateName; uid and creationTimestamp stand for the rest, which
// kube's object always holds on an update and no CRD schema may declare:
// ratcheting pairs the root with the old root through every top-level
// field, and, as in kube, they keep the root from ever being unchanged.
// (Encoding the whole metadata cost a valid write's validation 2.5 times
// its time.)
func ruleObject(o *Object, fields map[string]any) map[string]any {
	md := make(map[string]any, 4)
	if o.Name != "" {
		md["name"] = o.Name
	}
	if o.GenerateName != "" {
		md["generateName"] = o.GenerateName
	}
	if o.UID != "" {
		md["uid"] = o.UID
	}
	if !o.CreationTimestamp.IsZero() {
		md["creationTimestamp"] = o.CreationTimestamp.UTC().Format(time.RFC3339)
	}
	fields["metadata"] = md
	if o.APIVersion != "" {
		fields["apiVersion"] = o.APIVersion
	}
	if o.Kind != "" {
		fields["kind"] = o.Kind
	}
	return fields
}

// rootPath is the field of an error about no field: kube-apiserver's nil
// *field.Path, which prints as "<nil>".
var rootPath = meta.NewPath("<nil>")

// blocksRules reports whether e keeps the CEL rules from running.
func blocksRules(e *meta.FieldError) bool {
	switch e.Type {
	case meta.FieldValueNotSupported, meta.FieldValueRequired, meta.FieldValueTooLong, meta.FieldValueTooMany, meta.FieldValueTypeInvalid:
		return true
	}
	return false
}

// scalePaths are a scale subresource's paths (.spec.replicas), each with
// its fields split at the dots once, as apimachinery's unstructured
// accessors read them.
type scalePaths struct {
	specReplicas, statusReplicas, labelSelector scalePath
}

type scalePath struct {
	path   string
	fields []string
}

func newScalePaths(s *CustomResourceSubresourceScale) *scalePaths {
	split := func(p string) scalePath {
		return scalePath{path: p, fields: pathFields(p)}
	}
	sp := &scalePaths{specReplicas: split(s.SpecReplicasPath), statusReplicas: split(s.StatusReplicasPath)}
	if s.LabelSelectorPath != nil {
		sp.labelSelector = split(*s.LabelSelectorPath)
	}
	return sp
}

// validateScaleSpec checks the spec replicas path of the scale
// subresource as kube-apiserver does on every write of the object: a
// value there must be a non-negative int32 (an integer JSON number).
func (c *crStrategy) validateScaleSpec(value map[string]any) meta.FieldErrors {
	if c.scale == nil {
		return nil
	}
	return checkReplicas(value, c.scale.specReplicas)
}

// validateScaleStatus checks the status replicas path (as
// validateScaleSpec) and the label selector path, a string when set.
func (c *crStrategy) validateScaleStatus(value map[string]any) meta.FieldErrors {
	if c.scale == nil {
		return nil
	}
	errs := checkReplicas(value, c.scale.statusReplicas)
	if p := c.scale.labelSelector; p.fields != nil {
		if v, found, err := nestedField(value, p.fields); err != nil {
			errs = append(errs, meta.Invalid(meta.NewPath(p.path), "", err.Error()))
		} else if _, ok := v.(string); found && !ok {
			errs = append(errs, meta.Invalid(meta.NewPath(p.path), "", accessorError(p.fields, v, "string")))
		}
	}
	return errs
}

func checkReplicas(value map[string]any, p scalePath) meta.FieldErrors {
	v, found, err := nestedField(value, p.fields)
	if err != nil {
		return meta.FieldErrors{meta.Invalid(meta.NewPath(p.path), int64(0), err.Error())}
	}
	if !found {
		return nil
	}
	n, ok := v.(int64)
	switch {
	case !ok:
		return meta.FieldErrors{meta.Invalid(meta.NewPath(p.path), int64(0), accessorError(p.fields, v, "int64"))}
	case n < 0:
		return meta.FieldErrors{meta.Invalid(meta.NewPath(p.path), n, "should be a non-negative integer")}
	case n > math.MaxInt32:
		return meta.FieldErrors{meta.Invalid(meta.NewPath(p.path), n, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}

// nestedField finds the value at a scale path's fields, as
// apimachinery's unstructured.NestedFieldNoCopy does: a value on the way
// that is not an object is an error with its accessor message, naming the
// path up to the field looked up in it.
func nestedField(value map[string]any, fields []string) (any, bool, error) {
	var v any = value
	for i, f := range fields {
		if v == nil {
			return nil, false, nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false, errors.New(accessorError(fields[:i+1], v, "map[string]interface{}"))
		}
		if v, ok = m[f]; !ok {
			return nil, false, nil
		}
	}
	return v, true, nil
}

// accessorError is apimachinery's message for a value of the wrong Go
// type: the values are of the same Go types as kube-apiserver's (int64,
// float64, string, bool, map[string]any, []any), so %T names them alike.
func accessorError(fields []string, v any, want string) string {
	return fmt.Sprintf(".%s accessor error: %v is of the type %T, expected %s", strings.Join(fields, "."), v, v, want)
}

// printerColumns turns a version's additionalPrinterColumns into Table
// columns after NAME; without any, AGE, as kube-apiserver shows.
func printerColumns(cols []CustomResourceColumnDefinition) []registry.Column[*Object] {
	if len(cols) == 0 {
		cols = []CustomResourceColumnDefinition{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp",
			Description: "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."}}
	}
	out := make([]registry.Column[*Object], 0, len(cols))
	for _, c := range cols {
		desc := c.Description
		if desc == "" {
			desc = "Custom resource definition column (in JSONPath format): " + c.JSONPath
		}
		path, err := parseJSONPath(c.JSONPath)
		out = append(out, registry.Column[*Object]{Name: c.Name, Type: c.Type, Format: c.Format, Description: desc, Priority: c.Priority,
			Value: func(o *Object) any {
				if err != nil {
					return nil
				}
				v, ok := path.find(o)
				if !ok {
					return nil
				}
				return cell(c.Type, v)
			}})
	}
	return out
}

// cell renders a printer column's value as kube-apiserver does: by the
// column's type, nil when the value does not fit it.
func cell(typ string, v any) any {
	switch typ {
	case "integer":
		switch t := v.(type) {
		case int64:
			return t
		case float64:
			return int64(t)
		}
	case "number":
		switch t := v.(type) {
		case int64:
			return float64(t)
		case float64:
			return t
		}
	case "boolean":
		if b, ok := v.(bool); ok {
			return b
		}
	case "string":
		switch t := v.(type) {
		case string:
			return t
		case nil:
			return nil
		}
		b, err := registry.EncodeJSON(v)
		if err != nil {
			return nil
		}
		return string(b)
	case "date":
		if s, ok := v.(string); ok {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return "<invalid>"
			}
			return registry.TimestampSince(meta.NewTime(t), time.Now())
		}
	}
	return nil
}

// selectableFields returns the store's Fields for a version's
// selectableFields: each path's value as a field selector compares it.
func selectableFields(fields []SelectableField) func(*Object) meta.Set {
	if len(fields) == 0 {
		// Not nil: kube-apiserver refuses another field of a custom
		// resource as "field label not supported", not in the words of
		// its default conversion.
		return func(*Object) meta.Set { return nil }
	}
	type field struct {
		name string
		path jsonPath
	}
	var parsed []field
	for _, f := range fields {
		p, err := parseJSONPath(f.JSONPath)
		if err != nil {
			continue
		}
		parsed = append(parsed, field{name: f.JSONPath[1:], path: p})
	}
	return func(o *Object) meta.Set {
		set := make(meta.Set, len(parsed))
		for _, f := range parsed {
			v, _ := f.path.find(o)
			switch t := v.(type) {
			case string:
				set[f.name] = t
			case bool:
				set[f.name] = strconv.FormatBool(t)
			case int64:
				set[f.name] = strconv.FormatInt(t, 10)
			default:
				set[f.name] = ""
			}
		}
		return set
	}
}

// decodingResource serves a version's objects as the registry does, and
// gives request bodies objects that prune and default by the version's
// schema as they are decoded.
type decodingResource struct {
	registry.Resource
	schema *schema.Schema
}

var (
	_ registry.VersionConverter = decodingResource{}
	_ registry.StorageConverter = decodingResource{}
)

// New returns an empty object that decodes by the schema.
func (r decodingResource) New() meta.Object { return &Object{schema: r.schema} }

// Schema returns the version's schema, which type-checks admission
// policies (admission/policy.Schemaed).
func (r decodingResource) Schema() *schema.Schema { return r.schema }

// ToServed converts a stored object to the served version.
func (r decodingResource) ToServed(stored meta.Object) (meta.Object, error) {
	return r.Resource.(registry.VersionConverter).ToServed(stored)
}

// ToStorage converts a served object to the storage version.
func (r decodingResource) ToStorage(served meta.Object) (meta.Object, error) {
	return r.Resource.(registry.StorageConverter).ToStorage(served)
}
