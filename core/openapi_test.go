package core_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/core"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// schemas serves the core API's OpenAPI v3 document of path (api/v1,
// apis/events.k8s.io/v1...) and returns its schemas.
func schemas(t *testing.T, paths ...string) map[string]map[string]map[string]any {
	t.Helper()
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	api, err := core.New(core.Config{Storage: storage.Shared(mem)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.NewConfig()
	cfg.Authenticator = authn.Func(func(*http.Request) (*authn.Response, bool, error) {
		return &authn.Response{User: authn.User{Name: "admin", Groups: []string{authn.SystemPrivilegedGroup}}}, true, nil
	})
	completed, err := cfg.Complete()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := completed.New("core", server.NewEmptyDelegate())
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Install(srv); err != nil {
		t.Fatal(err)
	}
	srv.PrepareRun()
	out := map[string]map[string]map[string]any{}
	for _, p := range paths {
		rec := httptest.NewRecorder()
		srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi/v3/"+p, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET /openapi/v3/%s: %d %s", p, rec.Code, rec.Body)
		}
		var doc struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		out[p] = doc.Components.Schemas
	}
	return out
}

// TestOpenAPIDescriptions: the core kinds' OpenAPI descriptions, which
// kubectl explain prints, are kube-apiserver 1.37's whole texts, not their
// first sentences, and their lists have their own words.
func TestOpenAPIDescriptions(t *testing.T) {
	docs := schemas(t, "api/v1", "apis/events.k8s.io/v1", "apis/coordination.k8s.io/v1")
	tests := []struct {
		doc, schema, property, want string
	}{
		{"api/v1", "io.k8s.api.core.v1.ConfigMap", "binaryData", "BinaryData contains the binary data. Each key must consist of alphanumeric characters, '-', '_' or '.'. BinaryData can contain byte sequences that are not in the UTF-8 range. The keys stored in BinaryData must not overlap with the ones in the Data field, this is enforced during validation process. Using this field will require 1.10+ apiserver and kubelet. Note: BinaryData keys are not currently propagated to container env vars via ConfigMapKeyRef or ConfigMapRef env sources; only Data keys are used."},
		{"api/v1", "io.k8s.api.core.v1.ConfigMap", "data", "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process."},
		{"api/v1", "io.k8s.api.core.v1.ConfigMap", "immutable", "Immutable, if set to true, ensures that data stored in the ConfigMap cannot be updated (only object metadata can be modified). If not set to true, the field can be modified at any time. Defaulted to nil."},
		{"api/v1", "io.k8s.api.core.v1.ConfigMapList", "", "ConfigMapList is a resource containing a list of ConfigMap objects."},
		{"api/v1", "io.k8s.api.core.v1.ConfigMapList", "items", "Items is the list of ConfigMaps."},
		{"api/v1", "io.k8s.api.core.v1.Secret", "type", "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"},
		{"api/v1", "io.k8s.api.core.v1.SecretList", "items", "Items is a list of secret objects. More info: https://kubernetes.io/docs/concepts/configuration/secret"},
		{"api/v1", "io.k8s.api.core.v1.ServiceAccount", "automountServiceAccountToken", "AutomountServiceAccountToken indicates whether pods running as this service account should have an API token automatically mounted. Can be overridden at the pod level."},
		{"api/v1", "io.k8s.api.core.v1.LocalObjectReference", "", "LocalObjectReference contains enough information to let you locate the referenced object inside the same namespace."},
		{"api/v1", "io.k8s.api.core.v1.Namespace", "spec", "Spec defines the behavior of the Namespace. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status"},
		{"api/v1", "io.k8s.api.core.v1.NamespaceStatus", "phase", "Phase is the current lifecycle phase of the namespace. More info: https://kubernetes.io/docs/tasks/administer-cluster/namespaces/\n\nPossible enum values:\n - `\"Active\"` means the namespace is available for use in the system\n - `\"Terminating\"` means the namespace is undergoing graceful termination"},
		{"api/v1", "io.k8s.api.core.v1.Event", "firstTimestamp", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"},
		{"api/v1", "io.k8s.api.core.v1.EventList", "", "EventList is a list of events."},
		{"api/v1", "io.k8s.api.core.v1.TokenRequestSpec", "expirationSeconds", "expirationSeconds is the requested duration of validity of the request. The token issuer may return a token with a different validity duration so a client needs to check the 'expiration' field in a response."},
		{"api/v1", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", "Must be empty before the object is deleted from the registry. Each entry is an identifier for the responsible component that will remove the entry from the list. If the deletionTimestamp of the object is non-nil, entries in this list can only be removed. Finalizers may be processed and removed in any order.  Order is NOT enforced because it introduces significant risk of stuck finalizers. finalizers is a shared field, any actor with permission can reorder it. If the finalizer list is processed in order, then this can lead to a situation in which the component responsible for the first finalizer in the list is waiting for a signal (field value, external system, or other) produced by a component responsible for a finalizer later in the list, resulting in a deadlock. Without enforced ordering finalizers are free to order amongst themselves and are not vulnerable to ordering changes in the list."},
		{"api/v1", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "deletionTimestamp", "DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. This field is set by the server when a graceful deletion is requested by the user, and is not directly settable by a client. The resource is expected to be deleted (no longer visible from resource lists, and not reachable by name) after the time in this field, once the finalizers list is empty. As long as the finalizers list contains items, deletion is blocked. Once the deletionTimestamp is set, this value may not be unset or be set further into the future, although it may be shortened or the resource may be deleted prior to this time. For example, a user may request that a pod is deleted in 30 seconds. The Kubelet will react by sending a graceful termination signal to the containers in the pod. After that 30 seconds, the Kubelet will send a hard termination signal (SIGKILL) to the container and after cleanup, remove the pod from the API. In the presence of network partitions, this object may still exist after this timestamp, until an administrator or automated process can determine the resource is fully terminated. If not set, graceful deletion of the object has not been requested.\n\nPopulated by the system when a graceful deletion is requested. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"},
		{"apis/events.k8s.io/v1", "io.k8s.events.v1.Event", "note", "note is a human-readable description of the status of this operation. Maximal length of the note is 1kB, but libraries should be prepared to handle values up to 64kB."},
		{"apis/events.k8s.io/v1", "io.k8s.events.v1.EventList", "metadata", "metadata is the standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"},
		{"apis/coordination.k8s.io/v1", "io.k8s.coordination.v1.Lease", "metadata", "metadata is the standard object metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"},
		{"apis/coordination.k8s.io/v1", "io.k8s.coordination.v1.LeaseSpec", "leaseDurationSeconds", "leaseDurationSeconds is a duration that candidates for a lease need to wait to force acquire it. This is measured against the time of last observed renewTime."},
	}
	for _, tt := range tests {
		t.Run(tt.schema+"."+tt.property, func(t *testing.T) {
			s, ok := docs[tt.doc][tt.schema]
			if !ok {
				t.Fatalf("no schema %s in %s", tt.schema, tt.doc)
			}
			if tt.property != "" {
				props, _ := s["properties"].(map[string]any)
				if s, ok = props[tt.property].(map[string]any); !ok {
					t.Fatalf("%s has no property %s", tt.schema, tt.property)
				}
			}
			if got, _ := s["description"].(string); got != tt.want {
				t.Errorf("description\n got %q\nwant %q", got, tt.want)
			}
		})
	}
	// kubectl explain marks the required fields: kube-apiserver's.
	for _, tt := range []struct {
		doc, schema string
		want        []string
	}{
		{"api/v1", "io.k8s.api.core.v1.Event", []string{"metadata", "involvedObject"}},
		{"apis/events.k8s.io/v1", "io.k8s.events.v1.Event", []string{"eventTime"}},
		{"api/v1", "io.k8s.api.core.v1.NamespaceCondition", []string{"type", "status"}},
		{"api/v1", "io.k8s.api.core.v1.TokenRequestSpec", nil},
	} {
		var got []string
		req, _ := docs[tt.doc][tt.schema]["required"].([]any)
		for _, r := range req {
			got = append(got, r.(string))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: required %q, want %q", tt.schema, got, tt.want)
		}
	}
	// kubectl explain prints every field's words: none is left without.
	for doc, defs := range docs {
		for name, s := range defs {
			props, _ := s["properties"].(map[string]any)
			for p, v := range props {
				if d, _ := v.(map[string]any)["description"].(string); d == "" {
					t.Errorf("%s: %s.%s has no description", doc, name, p)
				}
			}
		}
	}
}
