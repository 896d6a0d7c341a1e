package extensions

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCRD is a CRD every case below breaks in one way.
func validCRD() *CustomResourceDefinition {
	crd := &CustomResourceDefinition{}
	if err := json.Unmarshal([]byte(`{
  "metadata": {"name": "widgets.example.com"},
  "spec": {
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "color": {"type": "string"}, "size": {"type": "number"}}}}}}}]
  }}`), crd); err != nil {
		panic(err)
	}
	return crd
}

// The messages are kube-apiserver's (k8s.io/apiextensions-apiserver's
// validation), field path and detail.
func TestValidateCustomResourceDefinition(t *testing.T) {
	const dns1035 = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
	for _, tc := range []struct {
		name   string
		change func(*CustomResourceDefinition)
		want   []string
	}{
		{"valid", func(*CustomResourceDefinition) {}, nil},
		{"name not plural.group", func(c *CustomResourceDefinition) { c.Name = "widget.example.com" },
			[]string{`metadata.name: Invalid value: "widget.example.com": must be spec.names.plural+"."+spec.group`}},
		{"no group", func(c *CustomResourceDefinition) { c.Spec.Group = ""; c.Name = "widgets." },
			[]string{`spec.group: Required value`}},
		{"group without a dot", func(c *CustomResourceDefinition) { c.Spec.Group = "example"; c.Name = "widgets.example" },
			[]string{`spec.group: Invalid value: "example": should be a domain with at least one dot`}},
		{"no scope", func(c *CustomResourceDefinition) { c.Spec.Scope = "" }, []string{`spec.scope: Required value`}},
		{"bad scope", func(c *CustomResourceDefinition) { c.Spec.Scope = "Galaxy" },
			[]string{`spec.scope: Unsupported value: "Galaxy": supported values: "Cluster", "Namespaced"`}},
		{"two storage versions", func(c *CustomResourceDefinition) {
			v := c.Spec.Versions[0]
			v.Name = "v2"
			c.Spec.Versions = append(c.Spec.Versions, v)
		}, []string{`must have exactly one version marked as storage version`,
			// kube-apiserver records the first storage version as stored.
			`status.storedVersions: Invalid value: ["v1"]: must have the storage version v2`}},
		{"no storage version", func(c *CustomResourceDefinition) { c.Spec.Versions[0].Storage = false },
			[]string{`must have exactly one version marked as storage version`, `status.storedVersions: Invalid value: null: must have at least one stored version`}},
		{"no versions", func(c *CustomResourceDefinition) { c.Spec.Versions = nil },
			[]string{`spec.versions: Invalid value: null: must have exactly one version marked as storage version`, `status.storedVersions: Invalid value: null: must have at least one stored version`}},
		{"duplicate versions", func(c *CustomResourceDefinition) {
			v := c.Spec.Versions[0]
			v.Storage = false
			c.Spec.Versions = append(c.Spec.Versions, v)
		}, []string{`must contain unique version names`}},
		{"bad version name", func(c *CustomResourceDefinition) { c.Spec.Versions[0].Name = "V1" },
			[]string{`spec.versions[0].name: Invalid value: "V1": ` + dns1035}},
		{"no schema", func(c *CustomResourceDefinition) { c.Spec.Versions[0].Schema = nil },
			[]string{`spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required`}},
		{"no kind", func(c *CustomResourceDefinition) { c.Spec.Names.Kind = "" }, []string{`spec.names.kind: Required value`}},
		{"bad plural", func(c *CustomResourceDefinition) { c.Spec.Names.Plural = "Widgets"; c.Name = "Widgets.example.com" },
			[]string{`spec.names.plural: Invalid value: "Widgets": ` + dns1035}},
		{"kind with a dot", func(c *CustomResourceDefinition) { c.Spec.Names.Kind = "Wid.get" },
			[]string{`spec.names.kind: Invalid value: "Wid.get": may have mixed case, but should otherwise match: ` + dns1035}},
		{"kind is listKind", func(c *CustomResourceDefinition) { c.Spec.Names.ListKind = "Widget" },
			[]string{`spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same`}},
		{"bad short name", func(c *CustomResourceDefinition) { c.Spec.Names.ShortNames = []string{"w_d"} },
			[]string{`spec.names.shortNames[0]: Invalid value: "w_d": ` + dns1035}},
		{"scale paths", func(c *CustomResourceDefinition) {
			sel := "spec.selector"
			c.Spec.Versions[0].Subresources = &CustomResourceSubresources{Scale: &CustomResourceSubresourceScale{
				SpecReplicasPath: ".status.replicas", LabelSelectorPath: &sel}}
		}, []string{
			`spec.versions[0].subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be a json path under .spec`,
			`spec.versions[0].subresources.scale.statusReplicasPath: Required value`,
			`spec.versions[0].subresources.scale.labelSelectorPath: Invalid value: "spec.selector": must be a simple json path starting with .`,
		}},
		{"printer column", func(c *CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns = []CustomResourceColumnDefinition{{Type: "color", Format: "rgb"}}
		}, []string{
			`spec.versions[0].additionalPrinterColumns[0].name: Required value`,
			`spec.versions[0].additionalPrinterColumns[0].type: Unsupported value: "color": supported values: "boolean", "date", "integer", "number", "string"`,
			`spec.versions[0].additionalPrinterColumns[0].format: Unsupported value: "rgb": supported values: "byte", "date", "date-time", "double", "float", "int32", "int64", "password"`,
			`spec.versions[0].additionalPrinterColumns[0].JSONPath: Required value`,
		}},
		{"selectable fields", func(c *CustomResourceDefinition) {
			c.Spec.Versions[0].SelectableFields = []SelectableField{{JSONPath: ".spec.color"}, {JSONPath: ".spec.color"}, {JSONPath: ".spec.size"}, {JSONPath: ".spec.shape"}, {}}
		}, []string{
			`spec.versions[0].selectableFields[1].jsonPath: Duplicate value: ".spec.color"`,
			`spec.versions[0].selectableFields[2].jsonPath: Invalid value: ".spec.size": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.`,
			`spec.versions[0].selectableFields[3].jsonPath: Invalid value: ".spec.shape": is an invalid path: does not refer to a valid field: .spec.shape`,
			`spec.versions[0].selectableFields[4].jsonPath: Required value`,
		}},
		{"bad conversion strategy", func(c *CustomResourceDefinition) {
			c.Spec.Conversion = &CustomResourceConversion{Strategy: "Magic"}
		}, []string{`spec.conversion.strategy: Unsupported value: "Magic": supported values: "None", "Webhook"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := validCRD()
			tc.change(crd)
			// The store records the storage version before validating.
			crdStrategy{}.PrepareForCreate(t.Context(), crd)
			errs := ValidateCustomResourceDefinition(crd)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if len(tc.want) == 0 {
				if len(got) > 0 {
					t.Fatalf("errors %q, want none", got)
				}
				return
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					if g == w || (!strings.Contains(w, ": ") && strings.HasSuffix(g, w)) {
						found = true
					}
				}
				if !found {
					t.Errorf("no error %q in %q", w, got)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("%d errors %q, want %d", len(got), got, len(tc.want))
			}
		})
	}
}

func TestValidateCustomResourceDefinitionUpdate(t *testing.T) {
	old := validCRD()
	old.Status.StoredVersions = []string{"v1"}
	old.Status.Conditions = []CustomResourceDefinitionCondition{{Type: Established, Status: ConditionTrue}}
	crd := validCRD()
	crd.Status.StoredVersions = []string{"v1", "v0"}
	crd.Spec.Scope = ClusterScoped
	crd.Spec.Names.Kind = "Gadget"
	crd.Spec.Names.ListKind = "GadgetList"
	var got []string
	for _, e := range ValidateCustomResourceDefinitionUpdate(crd, old) {
		got = append(got, e.Error())
	}
	want := []string{
		`spec.scope: Invalid value: "Cluster": field is immutable`,
		`spec.names.kind: Invalid value: "Gadget": field is immutable`,
		`status.storedVersions[1]: Invalid value: "v0": missing from spec.versions; v0 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v0 and removes v0 from status.storedVersions`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCompareVersions(t *testing.T) {
	in := []string{"v1alpha1", "foo", "v2", "v1beta1", "v1", "v11alpha2", "v10beta3", "v12alpha1", "v3beta1", "bar"}
	sorted := append([]string(nil), in...)
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			if compareVersions(sorted[j], sorted[i]) > 0 {
				sorted[i], sorted[j] = sorted[j], sorted[i]
			}
		}
	}
	// kube-apiserver's documented order of CRD versions.
	want := "v2 v1 v10beta3 v3beta1 v1beta1 v12alpha1 v11alpha2 v1alpha1 bar foo"
	if got := strings.Join(sorted, " "); got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

// A write to a CRD's /status checks its accepted names and nothing of
// status.storedVersions, as kube-apiserver's status strategy.
func TestValidateCustomResourceDefinitionStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*CustomResourceDefinition)
		want   []string
	}{
		{"no stored version", func(c *CustomResourceDefinition) { c.Status.StoredVersions = []string{} }, nil},
		{"a stored version not served", func(c *CustomResourceDefinition) { c.Status.StoredVersions = []string{"v0"} }, nil},
		{"bad accepted plural", func(c *CustomResourceDefinition) {
			c.Status.StoredVersions = []string{"v1"}
			c.Status.AcceptedNames = CustomResourceDefinitionNames{Plural: "Widgets", Kind: "Widget"}
		}, []string{`status.acceptedNames.plural: Invalid value: "Widgets": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := validCRD()
			tc.change(crd)
			var got []string
			for _, e := range ValidateCustomResourceDefinitionStatus(crd) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
