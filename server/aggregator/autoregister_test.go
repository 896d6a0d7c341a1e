package aggregator_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/aggregator"
	"github.com/apikit-dev/apikit/server/extensions"
	"github.com/apikit-dev/apikit/testenv"
)

// gadgetsCRD serves v1 and v2 of example.com, and stores but does not
// serve v3.
const gadgetsCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "gadgets.example.com"},
  "spec": {
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
    "versions": [%s]
  }
}`

func gadgetVersion(name string, served, storage bool) string {
	return fmt.Sprintf(`{"name": %q, "served": %t, "storage": %t, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}`, name, served, storage)
}

// TestAutoregisterCustomResources runs extensions -> aggregator, with no
// setting (the aggregator follows the chain's groups through
// WatchAPIGroups), and checks kube's CRD registration: a local APIService
// labelled automanaged "true" for each served version of a CRD, appearing after the CRD, put back when
// deleted, gone with the version or the CRD; built-in group-versions keep
// "onstart"; a user's own APIService is left alone. The aggregator's
// OpenAPI documents follow the CRD as well.
func TestAutoregisterCustomResources(t *testing.T) {
	env := testenv.Start(t, func(c *server.Config) (*server.GenericServer, error) {
		completed, err := c.Complete()
		if err != nil {
			return nil, err
		}
		ext, err := extensions.New(completed, nil, extensions.Config{})
		if err != nil {
			return nil, err
		}
		agg, err := aggregator.New(completed, ext.GenericServer, aggregator.Config{})
		if err != nil {
			return nil, err
		}
		return agg.GenericServer, nil
	})
	hc, err := env.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	hc.Timeout = 30 * time.Second
	do := func(method, path, contentType, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, env.Host+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const apiservices = "/apis/apiregistration.k8s.io/v1/apiservices/"
	// get returns the APIService's automanaged label and priorities, or
	// "absent".
	get := func(name string) string {
		t.Helper()
		code, body := do("GET", apiservices+name, "", "")
		if code == http.StatusNotFound {
			return "absent"
		}
		var s aggregator.APIService
		if code != http.StatusOK || json.Unmarshal([]byte(body), &s) != nil {
			t.Fatalf("GET APIService %s: %d %s", name, code, body)
		}
		return fmt.Sprintf("%s %d/%d local=%t", s.Labels[aggregator.AutomanagedLabel], s.Spec.GroupPriorityMinimum, s.Spec.VersionPriority, s.Spec.Service == nil)
	}
	// eventually waits until every APIService named is as wanted.
	eventually := func(what string, want map[string]string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var wrong []string
			for name, w := range want {
				if got := get(name); got != w {
					wrong = append(wrong, fmt.Sprintf("%s: %q, want %q", name, got, w))
				}
			}
			if len(wrong) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s", what, strings.Join(wrong, "; "))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	const crdAPIService = "true 1000/100 local=true"

	eventually("built-in group-versions", map[string]string{
		"v1.apiextensions.k8s.io":   "onstart 16700/15 local=true",
		"v1.apiregistration.k8s.io": "onstart 17800/15 local=true",
	})
	// A user's APIService of a group no server serves: never the
	// registration's to delete.
	if code, body := do("POST", strings.TrimSuffix(apiservices, "/"), "application/json",
		`{"metadata":{"name":"v1.mine.example.com"},"spec":{"group":"mine.example.com","version":"v1","groupPriorityMinimum":10,"versionPriority":1}}`); code != http.StatusCreated {
		t.Fatalf("creating a user's APIService: %d %s", code, body)
	}

	crd := fmt.Sprintf(gadgetsCRD, strings.Join([]string{gadgetVersion("v1", true, true), gadgetVersion("v2", true, false), gadgetVersion("v3", false, false)}, ","))
	created := time.Now()
	if code, body := do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", crd); code != http.StatusCreated {
		t.Fatalf("creating the CRD: %d %s", code, body)
	}
	eventually("after the CRD is created", map[string]string{
		"v1.example.com": crdAPIService, "v2.example.com": crdAPIService, "v3.example.com": "absent",
	})
	// Kept generous for a loaded machine; on a quiet one it is a few
	// milliseconds (the registration follows WatchAPIGroups).
	t.Logf("the CRD's APIServices were registered %v after its create", time.Since(created))

	// The aggregator's OpenAPI documents follow the CRDs too (kubectl
	// explain reads them).
	openAPIHas := func(path, want string) func() bool {
		return func() bool { _, body := do("GET", path, "", ""); return strings.Contains(body, want) }
	}
	waitFor(t, "the CRD's OpenAPI v3 group-version", openAPIHas("/openapi/v3", `"apis/example.com/v1"`), true)
	waitFor(t, "the CRD's OpenAPI v2 paths", openAPIHas("/openapi/v2", `"/apis/example.com/v2/namespaces/{namespace}/gadgets"`), true)

	// The aggregated discovery lists a CRD joining a group-version already
	// listed.
	discoveryHas := func(resource string) func() bool {
		return func() bool {
			req, _ := http.NewRequest("GET", env.Host+"/apis", nil)
			req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
			resp, err := hc.Do(req)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return strings.Contains(string(b), `"resource":"`+resource+`"`)
		}
	}
	waitFor(t, "gadgets in the aggregated discovery", discoveryHas("gadgets"), true)
	gizmos := strings.NewReplacer("gadgets", "gizmos", "gadget", "gizmo", "Gadget", "Gizmo").Replace(
		fmt.Sprintf(gadgetsCRD, gadgetVersion("v1", true, true)))
	if code, body := do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", gizmos); code != http.StatusCreated {
		t.Fatalf("creating the second CRD: %d %s", code, body)
	}
	waitFor(t, "gizmos in the aggregated discovery", discoveryHas("gizmos"), true)
	if code, body := do("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.example.com", "", ""); code != http.StatusOK {
		t.Fatalf("deleting the second CRD: %d %s", code, body)
	}
	waitFor(t, "gizmos in the aggregated discovery", discoveryHas("gizmos"), false)

	// Deleted by a user, it comes back; changed by a user, it is put back.
	if code, body := do("DELETE", apiservices+"v1.example.com", "", ""); code != http.StatusOK {
		t.Fatalf("deleting v1.example.com: %d %s", code, body)
	}
	if code, body := do("PATCH", apiservices+"v2.example.com", "application/merge-patch+json", `{"spec":{"versionPriority":7}}`); code != http.StatusOK {
		t.Fatalf("patching v2.example.com: %d %s", code, body)
	}
	eventually("after a user deleted and changed them", map[string]string{
		"v1.example.com": crdAPIService, "v2.example.com": crdAPIService,
	})

	// A version no longer served loses its APIService.
	patch := fmt.Sprintf(`{"spec":{"versions":[%s]}}`, strings.Join([]string{gadgetVersion("v1", true, true), gadgetVersion("v2", false, false), gadgetVersion("v3", false, false)}, ","))
	if code, body := do("PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com", "application/merge-patch+json", patch); code != http.StatusOK {
		t.Fatalf("unserving v2: %d %s", code, body)
	}
	eventually("after v2 is no longer served", map[string]string{
		"v1.example.com": crdAPIService, "v2.example.com": "absent",
	})

	if code, body := do("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com", "", ""); code != http.StatusOK {
		t.Fatalf("deleting the CRD: %d %s", code, body)
	}
	eventually("after the CRD is deleted", map[string]string{
		"v1.example.com":          "absent",
		"v1.mine.example.com":     " 10/1 local=true",
		"v1.apiextensions.k8s.io": "onstart 16700/15 local=true",
	})
	waitFor(t, "the CRD's OpenAPI v3 group-version", openAPIHas("/openapi/v3", `"apis/example.com/v1"`), false)
}

// waitFor polls cond until it is want, for 30 seconds.
func waitFor(t *testing.T, what string, cond func() bool, want bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for cond() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %t after 30s", what, !want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
