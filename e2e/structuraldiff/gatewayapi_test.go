package structuraldiff

import (
	"encoding/json"
	"github.com/apikit-dev/apikit/e2e/internal/gatewayapi"
	"io/fs"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
)

// TestGatewayAPIMatchesKube installs the Gateway API standard channel's
// CRDs as kube-apiserver checks them (both must accept every one), then
// puts every example resource of the release through both: validation
// errors, pruned paths and pruned and defaulted objects must match. CEL
// rules are package cel's and are not run here.
func TestGatewayAPIMatchesKube(t *testing.T) {
	dir := gatewayapi.Dir(t)
	type version struct {
		js string
		s  *schema.Schema
	}
	versions := map[string]version{} // "group/version/Kind"
	crds, err := filepath.Glob(filepath.Join(dir, "config", "crd", "standard", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs under %s: %v", dir, err)
	}
	for _, f := range crds {
		for _, doc := range gatewayapi.Docs(t, f) {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := json.Unmarshal(doc, &crd); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if crd.Kind != "CustomResourceDefinition" {
				continue
			}
			for i, v := range crd.Spec.Versions {
				js, err := json.Marshal(v.Schema.OpenAPIV3Schema)
				if err != nil {
					t.Fatal(err)
				}
				if kube := kubeCheckSchema(t, string(js)); len(kube) > 0 {
					t.Errorf("%s %s: kube-apiserver refuses the schema: %s", crd.Name, v.Name, strings.Join(kube, "; "))
				}
				raw := decode(t, string(js)).(map[string]any)
				at := "spec.versions[" + strconv.Itoa(i) + "].schema.openAPIV3Schema"
				if errs := structural.CheckStructural(raw, at); len(errs) > 0 {
					t.Errorf("%s %s: CheckStructural refuses the schema: %v", crd.Name, v.Name, errs)
				}
				s, err := schema.FromOpenAPIV3(js)
				if err != nil {
					t.Errorf("%s %s: FromOpenAPIV3: %v", crd.Name, v.Name, err)
					continue
				}
				versions[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = version{string(js), s}
			}
		}
	}
	examples := 0
	err = filepath.WalkDir(filepath.Join(dir, "examples", "standard"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		for _, doc := range gatewayapi.Docs(t, path) {
			var tm struct{ APIVersion, Kind string }
			if err := json.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			v, ok := versions[tm.APIVersion+"/"+tm.Kind]
			if !ok {
				continue
			}
			examples++
			internal, ss := kubeSchema(t, v.js)
			name := filepath.Base(path) + " " + tm.Kind
			want := sorted(kubeValidate(t, internal, ss, decode(t, string(doc))))
			var got []string
			for _, e := range structural.Validate(v.s, decode(t, string(doc))) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(sorted(got), want) {
				t.Errorf("%s:\n apikit: %s\n   kube: %s", name, strings.Join(sorted(got), "\n         "), strings.Join(want, "\n         "))
			}
			kubeObj, ours := decode(t, string(doc)), decode(t, string(doc))
			wantPruned := kubePrune(t, ss, kubeObj, true)
			gotPruned := structural.Prune(v.s, ours, true)
			kubeDefault(ss, kubeObj)
			structural.Default(v.s, ours)
			if !reflect.DeepEqual(sorted(gotPruned), wantPruned) || !reflect.DeepEqual(ours, kubeObj) {
				a, _ := json.Marshal(ours)
				b, _ := json.Marshal(kubeObj)
				t.Errorf("%s: pruned and defaulted\n apikit: %q %s\n   kube: %q %s", name, gotPruned, a, wantPruned, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if examples < 20 {
		t.Errorf("only %d example resources of the release's CRDs were found", examples)
	}
	t.Logf("%d CRD versions, %d example resources", len(versions), examples)
}
