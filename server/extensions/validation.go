package extensions

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
)

// MaxSelectableFields is how many selectable fields a version may have, as
// kube-apiserver allows.
const MaxSelectableFields = 8

// printerColumnTypes and printerColumnFormats are what an additional
// printer column may say, sorted as kube-apiserver lists them.
var (
	printerColumnTypes   = []string{"boolean", "date", "integer", "number", "string"}
	printerColumnFormats = []string{"byte", "date", "date-time", "double", "float", "int32", "int64", "password"}
)

// ValidateCustomResourceDefinition checks a new CRD as kube-apiserver
// does, with its messages and field paths. Metadata is checked by the store.
// status.storedVersions is checked too: the store's PrepareForCreate has
// set it to the storage version, so a CRD without one is told that it has
// no stored version either, as kube-apiserver tells it.
func ValidateCustomResourceDefinition(crd *CustomResourceDefinition) meta.FieldErrors {
	errs := validateCRD(crd, true, false)
	return append(errs, validateStoredVersions(crd.Status.StoredVersions, crd.Spec.Versions, meta.NewPath("status", "storedVersions"))...)
}

func validateCRD(crd *CustomResourceDefinition, requireAcceptedReview, allowInvalidCABundle bool) meta.FieldErrors {
	var errs meta.FieldErrors
	if want := crd.Spec.Names.Plural + "." + crd.Spec.Group; crd.Name != want {
		errs = append(errs, meta.Invalid(meta.NewPath("metadata", "name"), crd.Name, `must be spec.names.plural+"."+spec.group`))
	}
	errs = append(errs, validateSpec(&crd.Spec, meta.NewPath("spec"))...)
	errs = append(errs, validateConversion(crd.Spec.Conversion, requireAcceptedReview, allowInvalidCABundle, meta.NewPath("spec", "conversion"))...)
	errs = append(errs, validateNames(&crd.Status.AcceptedNames, meta.NewPath("status", "acceptedNames"))...)
	return errs
}

// ValidateCustomResourceDefinitionUpdate checks an updated CRD against the
// stored one: what ValidateCustomResourceDefinition checks, the fields that
// may not change, and status.storedVersions.
func ValidateCustomResourceDefinitionUpdate(crd, old *CustomResourceDefinition) meta.FieldErrors {
	requireAccepted, allowInvalidCABundle := conversionOptions(old)
	errs := validateCRD(crd, requireAccepted, allowInvalidCABundle)
	spec := meta.NewPath("spec")
	if old.Status.IsTrue(Established) {
		// These decide where and how objects are stored.
		errs = append(errs, immutable(crd.Spec.Scope, old.Spec.Scope, spec.Child("scope"))...)
		errs = append(errs, immutable(crd.Spec.Names.Kind, old.Spec.Names.Kind, spec.Child("names", "kind"))...)
	}
	errs = append(errs, immutable(crd.Spec.Group, old.Spec.Group, spec.Child("group"))...)
	errs = append(errs, immutable(crd.Spec.Names.Plural, old.Spec.Names.Plural, spec.Child("names", "plural"))...)
	errs = append(errs, validateStoredVersions(crd.Status.StoredVersions, crd.Spec.Versions, meta.NewPath("status", "storedVersions"))...)
	return errs
}

// ValidateCustomResourceDefinitionStatus checks a write to /status: its
// accepted names only, as kube-apiserver checks it. status.storedVersions
// is not checked there: a storage migration writes it through /status
// (dropping a version no object is stored in any more), and the next
// write of the CRD itself checks it again.
func ValidateCustomResourceDefinitionStatus(crd *CustomResourceDefinition) meta.FieldErrors {
	return validateNames(&crd.Status.AcceptedNames, meta.NewPath("status", "acceptedNames"))
}

func immutable[T comparable](v, old T, p *meta.Path) meta.FieldErrors {
	if v == old {
		return nil
	}
	return meta.FieldErrors{meta.Invalid(p, v, "field is immutable")}
}

func validateStoredVersions(stored []string, versions []CustomResourceDefinitionVersion, p *meta.Path) meta.FieldErrors {
	if len(stored) == 0 {
		return meta.FieldErrors{meta.Invalid(p, stored, "must have at least one stored version")}
	}
	var errs meta.FieldErrors
	for _, v := range versions {
		if v.Storage && !slices.Contains(stored, v.Name) {
			errs = append(errs, meta.Invalid(p, stored, "must have the storage version "+v.Name))
		}
	}
	for i, s := range stored {
		if !slices.ContainsFunc(versions, func(v CustomResourceDefinitionVersion) bool { return v.Name == s }) {
			errs = append(errs, meta.Invalid(p.Index(i), s, fmt.Sprintf("missing from spec.versions; %[1]s was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in %[1]s and removes %[1]s from status.storedVersions", s)))
		}
	}
	return errs
}

func validateSpec(spec *CustomResourceDefinitionSpec, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	switch {
	case spec.Group == "":
		errs = append(errs, meta.Required(p.Child("group"), ""))
	case len(meta.ValidateDNS1123Subdomain(spec.Group)) > 0:
		errs = append(errs, meta.Invalid(p.Child("group"), spec.Group, strings.Join(meta.ValidateDNS1123Subdomain(spec.Group), ",")))
	case !strings.Contains(spec.Group, "."):
		errs = append(errs, meta.Invalid(p.Child("group"), spec.Group, "should be a domain with at least one dot"))
	}
	errs = append(errs, enumString(p.Child("scope"), string(spec.Scope), []string{string(ClusterScoped), string(NamespaceScoped)})...)

	storage, names, unique := 0, map[string]bool{}, true
	for i := range spec.Versions {
		v := &spec.Versions[i]
		vp := p.Child("versions").Index(i)
		if v.Storage {
			storage++
		}
		if names[v.Name] {
			unique = false
		}
		names[v.Name] = true
		if e := meta.ValidateDNS1035Label(v.Name); len(e) > 0 {
			errs = append(errs, meta.Invalid(vp.Child("name"), v.Name, strings.Join(e, ",")))
		}
		errs = append(errs, validateVersion(v, vp)...)
	}
	if !unique {
		errs = append(errs, meta.Invalid(p.Child("versions"), spec.Versions, "must contain unique version names"))
	}
	if storage != 1 {
		errs = append(errs, meta.Invalid(p.Child("versions"), spec.Versions, "must have exactly one version marked as storage version"))
	}
	n := &spec.Names
	if n.Plural == "" {
		errs = append(errs, meta.Required(p.Child("names", "plural"), ""))
	}
	if n.Singular == "" {
		errs = append(errs, meta.Required(p.Child("names", "singular"), ""))
	}
	if n.Kind == "" {
		errs = append(errs, meta.Required(p.Child("names", "kind"), ""))
	}
	if n.ListKind == "" {
		errs = append(errs, meta.Required(p.Child("names", "listKind"), ""))
	}
	errs = append(errs, validateNames(n, p.Child("names"))...)
	if spec.PreserveUnknownFields {
		errs = append(errs, meta.Invalid(p.Child("preserveUnknownFields"), true, "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"))
	}
	return errs
}

func enumString(p *meta.Path, v string, accepted []string) meta.FieldErrors {
	if v == "" {
		return meta.FieldErrors{meta.Required(p, "")}
	}
	if !slices.Contains(accepted, v) {
		return meta.FieldErrors{meta.NotSupported(p, v, accepted)}
	}
	return nil
}

func validateNames(n *CustomResourceDefinitionNames, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	label := func(v string, child string, mixedCase bool) {
		check := v
		if mixedCase {
			check = strings.ToLower(v)
		}
		if v == "" {
			return
		}
		if e := meta.ValidateDNS1035Label(check); len(e) > 0 {
			detail := strings.Join(e, ",")
			if mixedCase {
				detail = "may have mixed case, but should otherwise match: " + detail
			}
			errs = append(errs, meta.Invalid(p.Child(child), v, detail))
		}
	}
	label(n.Plural, "plural", false)
	label(n.Singular, "singular", false)
	label(n.Kind, "kind", true)
	label(n.ListKind, "listKind", true)
	for i, s := range n.ShortNames {
		if e := meta.ValidateDNS1035Label(s); len(e) > 0 {
			errs = append(errs, meta.Invalid(p.Child("shortNames").Index(i), s, strings.Join(e, ",")))
		}
	}
	if n.Kind != "" && n.Kind == n.ListKind {
		errs = append(errs, meta.Invalid(p.Child("listKind"), n.ListKind, "kind and listKind may not be the same"))
	}
	for i, c := range n.Categories {
		if e := meta.ValidateDNS1035Label(c); len(e) > 0 {
			errs = append(errs, meta.Invalid(p.Child("categories").Index(i), c, strings.Join(e, ",")))
		}
	}
	return errs
}

// validateVersion checks one version: its schema (read into the schema
// model), subresources, printer columns and selectable fields.
func validateVersion(v *CustomResourceDefinitionVersion, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	sp := p.Child("schema", "openAPIV3Schema")
	var root *schema.Schema
	if v.Schema == nil || len(v.Schema.OpenAPIV3Schema) == 0 {
		errs = append(errs, meta.Required(sp, "schemas are required"))
	} else {
		var raw map[string]any
		if err := json.Unmarshal(v.Schema.OpenAPIV3Schema, &raw); err != nil {
			errs = append(errs, meta.Invalid(sp, "", "must be a JSON object"))
		} else if serrs := structural.CheckStructural(raw, sp.String()); len(serrs) > 0 {
			// apiextensions.k8s.io/v1 accepts structural schemas only.
			errs = append(errs, serrs...)
		} else if s, err := schema.FromOpenAPIV3(v.Schema.OpenAPIV3Schema); err != nil {
			errs = append(errs, meta.Invalid(sp, "", err.Error()))
		} else {
			root = s
			// x-kubernetes-validations compile and fit the cost budget.
			_, cerrs := cel.CompileSchema(s, sp)
			errs = append(errs, cerrs...)
		}
	}
	errs = append(errs, validateSubresources(v.Subresources, p.Child("subresources"))...)
	for i := range v.AdditionalPrinterColumns {
		errs = append(errs, validateColumn(&v.AdditionalPrinterColumns[i], p.Child("additionalPrinterColumns").Index(i))...)
	}
	if len(v.SelectableFields) > 0 {
		if root == nil {
			errs = append(errs, meta.Forbidden(p.Child("selectableFields"), "may only be set when version.schema.openAPIV3Schema is not included"))
		} else {
			errs = append(errs, validateSelectableFields(v.SelectableFields, root, p.Child("selectableFields"))...)
		}
	}
	return errs
}

func validateSubresources(s *CustomResourceSubresources, p *meta.Path) meta.FieldErrors {
	if s == nil || s.Scale == nil {
		return nil
	}
	var errs meta.FieldErrors
	under := func(path, child string, prefixes []string, detail string) {
		cp := p.Child(child)
		if path == "" {
			errs = append(errs, meta.Required(cp, ""))
			return
		}
		if e := validateSimpleJSONPath(path, cp); len(e) > 0 {
			errs = append(errs, e...)
			return
		}
		for _, prefix := range prefixes {
			if strings.HasPrefix(path, prefix) {
				return
			}
		}
		errs = append(errs, meta.Invalid(cp, path, detail))
	}
	under(s.Scale.SpecReplicasPath, "scale.specReplicasPath", []string{".spec."}, "should be a json path under .spec")
	under(s.Scale.StatusReplicasPath, "scale.statusReplicasPath", []string{".status."}, "should be a json path under .status")
	if s.Scale.LabelSelectorPath != nil && *s.Scale.LabelSelectorPath != "" {
		under(*s.Scale.LabelSelectorPath, "scale.labelSelectorPath", []string{".spec.", ".status."}, "should be a json path under either .spec or .status")
	}
	return errs
}

// validateSimpleJSONPath checks a path such as .spec.replicas.
func validateSimpleJSONPath(s string, p *meta.Path) meta.FieldErrors {
	switch {
	case s == "":
		return meta.FieldErrors{meta.Invalid(p, s, "must not be empty")}
	case s[0] != '.':
		return meta.FieldErrors{meta.Invalid(p, s, "must be a simple json path starting with .")}
	}
	return nil
}

func validateColumn(c *CustomResourceColumnDefinition, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if c.Name == "" {
		errs = append(errs, meta.Required(p.Child("name"), ""))
	}
	switch {
	case c.Type == "":
		errs = append(errs, meta.Required(p.Child("type"), "must be one of "+strings.Join(printerColumnTypes, ",")))
	case !slices.Contains(printerColumnTypes, c.Type):
		errs = append(errs, meta.NotSupported(p.Child("type"), c.Type, printerColumnTypes))
	}
	if c.Format != "" && !slices.Contains(printerColumnFormats, c.Format) {
		errs = append(errs, meta.NotSupported(p.Child("format"), c.Format, printerColumnFormats))
	}
	if c.JSONPath == "" {
		errs = append(errs, meta.Required(p.Child("JSONPath"), ""))
	} else {
		errs = append(errs, validateSimpleJSONPath(c.JSONPath, p.Child("JSONPath"))...)
	}
	return errs
}

func validateSelectableFields(fields []SelectableField, root *schema.Schema, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	seen := map[string]bool{}
	for i, f := range fields {
		jp := p.Index(i).Child("jsonPath")
		if f.JSONPath == "" {
			errs = append(errs, meta.Required(jp, ""))
			continue
		}
		if e := validateSimpleJSONPath(f.JSONPath, jp); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		if seen[f.JSONPath] {
			errs = append(errs, meta.Duplicate(jp, f.JSONPath))
		}
		seen[f.JSONPath] = true
		n, err := resolvePath(root, f.JSONPath)
		if err != nil {
			errs = append(errs, meta.Invalid(jp, f.JSONPath, "is an invalid path: "+err.Error()))
			continue
		}
		if n.Type != "string" && n.Type != "boolean" && n.Type != "integer" {
			errs = append(errs, meta.Invalid(jp, f.JSONPath, "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."))
		}
	}
	if len(seen) > MaxSelectableFields {
		errs = append(errs, &meta.FieldError{Type: meta.FieldValueTooMany, Field: p.String(), BadValue: len(seen),
			Detail: fmt.Sprintf("must have at most %d items", MaxSelectableFields)})
	}
	return errs
}

// resolvePath finds the schema node of a simple JSON path (.spec.color).
func resolvePath(root *schema.Schema, path string) (*schema.Schema, error) {
	n := root
	for _, part := range pathFields(path) {
		if part == "" {
			return nil, fmt.Errorf("empty segment in %s", path)
		}
		child, ok := n.Property(part)
		if !ok {
			return nil, fmt.Errorf("does not refer to a valid field: %s", path)
		}
		n = child
	}
	return n, nil
}

// acceptedConversionReviewVersions are the ConversionReview versions
// apikit speaks: v1 only (kube-apiserver, which prefers it, also speaks
// v1beta1).
var acceptedConversionReviewVersions = []string{"v1"}

// validateConversion checks spec.conversion as kube-apiserver does. Its
// paths are those of kube's internal type, which its v1 API reports too:
// spec.conversion.webhookClientConfig and
// spec.conversion.conversionReviewVersions. requireAccepted asks for a
// conversionReviewVersions naming v1 (on create, and on an update of a CRD
// whose versions named it); allowInvalidCABundle lets an update keep a
// caBundle that was already broken.
func validateConversion(c *CustomResourceConversion, requireAccepted, allowInvalidCABundle bool, p *meta.Path) meta.FieldErrors {
	if c == nil {
		return nil
	}
	errs := enumString(p.Child("strategy"), string(c.Strategy), []string{string(NoneConverter), string(WebhookConverter)})
	var cc *WebhookClientConfig
	var versions []string
	if c.Webhook != nil {
		cc, versions = c.Webhook.ClientConfig, c.Webhook.ConversionReviewVersions
	}
	ccp := p.Child("webhookClientConfig")
	if c.Strategy != WebhookConverter {
		if cc != nil {
			errs = append(errs, meta.Forbidden(ccp, "should not be set when strategy is not set to Webhook"))
		}
		if len(versions) > 0 {
			errs = append(errs, meta.Forbidden(p.Child("conversionReviewVersions"), "should not be set when strategy is not set to Webhook"))
		}
		return errs
	}
	switch {
	case cc == nil:
		errs = append(errs, meta.Required(ccp, "required when strategy is set to Webhook"))
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, meta.Required(ccp, "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, registration.ValidateWebhookURL(ccp.Child("url"), *cc.URL)...)
	default:
		s := cc.Service
		errs = append(errs, registration.ValidateWebhookService(ccp.Child("service"),
			&registration.ServiceReference{Namespace: s.Namespace, Name: s.Name, Path: s.Path, Port: s.Port})...)
	}
	if cc != nil && len(cc.CABundle) > 0 && !allowInvalidCABundle {
		errs = append(errs, validateCABundle(ccp.Child("caBundle"), cc.CABundle)...)
	}
	return append(errs, validateConversionReviewVersions(versions, requireAccepted, p.Child("conversionReviewVersions"))...)
}

// validateCABundle is apiserver's ValidateCABundle: the bundle must hold
// at least one PEM certificate that parses.
func validateCABundle(p *meta.Path, bundle []byte) meta.FieldErrors {
	rest, found := bundle, false
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" || len(block.Headers) != 0 {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return meta.FieldErrors{meta.Invalid(p, bundle, err.Error())}
		}
		found = true
	}
	if !found {
		return meta.FieldErrors{meta.Invalid(p, bundle, "data does not contain any valid RSA or ECDSA certificates")}
	}
	return nil
}

// validateConversionReviewVersions is kube-apiserver's check of
// conversionReviewVersions, against the versions apikit speaks.
func validateConversionReviewVersions(versions []string, requireAccepted bool, p *meta.Path) meta.FieldErrors {
	if len(versions) == 0 {
		return meta.FieldErrors{meta.Required(p, "")}
	}
	var errs meta.FieldErrors
	seen := map[string]bool{}
	accepted := false
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, meta.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range meta.ValidateDNS1035Label(v) {
			errs = append(errs, meta.Invalid(p.Index(i), v, msg))
		}
		accepted = accepted || slices.Contains(acceptedConversionReviewVersions, v)
	}
	if requireAccepted && !accepted {
		errs = append(errs, meta.Invalid(p, versions, "must include at least one of "+strings.Join(acceptedConversionReviewVersions, ", ")))
	}
	return errs
}

// conversionOptions are validateConversion's options for an update: a
// CRD whose conversionReviewVersions named no accepted version (or none)
// may keep them, and a caBundle that was broken, or any before the CRD
// was established, may stay, as kube-apiserver allows.
func conversionOptions(old *CustomResourceDefinition) (requireAccepted, allowInvalidCABundle bool) {
	requireAccepted, allowInvalidCABundle = true, false
	c := old.Spec.Conversion
	if c == nil || c.Webhook == nil {
		return requireAccepted, !old.Status.IsTrue(Established)
	}
	if vs := c.Webhook.ConversionReviewVersions; len(vs) > 0 && !slices.ContainsFunc(vs, func(v string) bool {
		return slices.Contains(acceptedConversionReviewVersions, v)
	}) {
		requireAccepted = false
	}
	if !old.Status.IsTrue(Established) {
		return requireAccepted, true
	}
	if cc := c.Webhook.ClientConfig; cc != nil && len(cc.CABundle) > 0 {
		allowInvalidCABundle = len(validateCABundle(meta.NewPath("caBundle"), cc.CABundle)) > 0
	}
	return requireAccepted, allowInvalidCABundle
}
