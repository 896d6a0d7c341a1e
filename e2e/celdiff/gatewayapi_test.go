package celdiff

import (
	"encoding/json"
	"github.com/apikit-dev/apikit/e2e/internal/gatewayapi"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestGatewayAPIRulesMatchKube compiles every CEL rule of the Gateway API
// standard and experimental channels' CRDs with both engines (both must
// accept them, within the cost budget), then validates every example of
// the release with both, on create and as an update from itself and from
// a changed copy: the messages must be the same.
func TestGatewayAPIRulesMatchKube(t *testing.T) {
	dir := gatewayapi.Dir(t)
	schemas := map[string]string{} // "group/version/Kind" -> schema JSON
	rulesSeen := 0
	for _, channel := range []string{"standard", "experimental"} {
		crds, err := filepath.Glob(filepath.Join(dir, "config", "crd", channel, "*.yaml"))
		if err != nil || len(crds) == 0 {
			t.Fatalf("no CRDs under %s: %v", dir, err)
		}
		for _, f := range crds {
			for _, doc := range gatewayapi.Docs(t, f) {
				var crd apiextensionsv1.CustomResourceDefinition
				if err := json.Unmarshal(doc, &crd); err != nil || crd.Kind != "CustomResourceDefinition" {
					continue
				}
				for _, v := range crd.Spec.Versions {
					js, err := json.Marshal(v.Schema.OpenAPIV3Schema)
					if err != nil {
						t.Fatal(err)
					}
					rulesSeen += strings.Count(string(js), `"rule":`)
					kube := kubeCRDErrors(t, string(js))
					_, apikit := apikitCompile(t, string(js))
					if len(kube) > 0 || len(apikit) > 0 {
						t.Errorf("%s %s %s:\napikit: %s\n  kube: %s", channel, crd.Name, v.Name, strings.Join(apikit, "\n        "), strings.Join(kube, "\n        "))
					}
					if channel == "standard" {
						schemas[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = string(js)
					}
				}
			}
		}
	}
	if rulesSeen < 50 {
		t.Fatalf("only %d rules in the CRDs: the release's layout changed?", rulesSeen)
	}
	examples := 0
	err := filepath.WalkDir(filepath.Join(dir, "examples", "standard"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		for _, doc := range gatewayapi.Docs(t, path) {
			var tm struct{ APIVersion, Kind string }
			if err := json.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			js, ok := schemas[tm.APIVersion+"/"+tm.Kind]
			if !ok {
				continue
			}
			examples++
			v, _ := apikitCompile(t, js)
			ss := kubeStructural(t, js)
			obj := decode(t, string(doc))
			changed := decode(t, string(doc))
			if spec, ok := changed["spec"].(map[string]any); ok {
				// A changed copy: transition rules and ratcheting see a
				// difference.
				for k, val := range spec {
					if s, ok := val.(string); ok {
						spec[k] = s + "x"
					}
				}
			}
			for _, old := range []map[string]any{nil, obj, changed} {
				want := kubeValidate(ss, obj, old)
				got := apikitValidate(v, obj, old)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s %s (old %v):\napikit: %s\n  kube: %s", filepath.Base(path), tm.Kind, old != nil,
						strings.Join(got, "\n        "), strings.Join(want, "\n        "))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if examples < 10 {
		t.Fatalf("only %d examples checked", examples)
	}
	t.Logf("%d rules compiled alike, %d examples validated alike", rulesSeen, examples)
}
