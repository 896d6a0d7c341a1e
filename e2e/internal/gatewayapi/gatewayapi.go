// Package gatewayapi gives the e2e tests the Gateway API release they
// install and compare against kube-apiserver: its module directory and its
// YAML files as JSON documents.
package gatewayapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Module is the release whose CRDs and examples real clusters install.
const Module = "sigs.k8s.io/gateway-api@v1.6.3"

// Dir downloads the module with the go command (from the module proxy or
// its cache) and returns where it is; without it the test skips.
func Dir(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", Module).Output()
	if err != nil {
		t.Skipf("go mod download %s: %v", Module, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Skipf("go mod download %s: no directory in %s", Module, out)
	}
	return mod.Dir
}

// Docs decodes every YAML document of a file into JSON.
func Docs(t testing.TB, path string) [][]byte {
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
