package structuraldiff

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
)

// gatewayAPI is the Gateway API release whose CRDs and examples real
// clusters install, as issue 14 asks them to be served.
const gatewayAPI = "sigs.k8s.io/gateway-api@v1.6.3"

// gatewayAPIDir downloads the module with the go command (from the module
// proxy or its cache) and returns where it is; without it the test skips.
func gatewayAPIDir(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", gatewayAPI).Output()
	if err != nil {
		t.Skipf("go mod download %s: %v", gatewayAPI, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Skipf("go mod download %s: no directory in %s", gatewayAPI, out)
	}
	return mod.Dir
}

// yamlDocs decodes every YAML document of a file into JSON.
func yamlDocs(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs [][]byte
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return docs
			}
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(raw)) > 0 && string(raw) != "null" {
			docs = append(docs, raw)
		}
	}
}

// TestGatewayAPIMatchesKube installs the Gateway API standard channel's
// CRDs as kube-apiserver checks them (both must accept every one), then
// puts every example resource of the release through both: validation
// errors, pruned paths and pruned and defaulted objects must match. CEL
// rules are package cel's and are not run here.
func TestGatewayAPIMatchesKube(t *testing.T) {
	dir := gatewayAPIDir(t)
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
		for _, doc := range yamlDocs(t, f) {
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
		for _, doc := range yamlDocs(t, path) {
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
