package aggregator

import (
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/certs"
)

// TestServiceClient resolves APIServices from a cluster's API: Services and
// EndpointSlices, read over HTTPS and kept a short while.
func TestServiceClient(t *testing.T) {
	var gets atomic.Int32
	cluster := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		if r.Header.Get("Authorization") != "Bearer resolver-token" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		switch {
		case r.URL.Path == "/api/v1/namespaces/wardle/services/api":
			io.WriteString(w, `{"kind":"Service","spec":{"type":"ClusterIP","clusterIP":"10.0.0.9","ports":[{"name":"https","port":443,"targetPort":8443}]}}`)
		case r.URL.Path == "/api/v1/namespaces/wardle/services/named":
			io.WriteString(w, `{"kind":"Service","spec":{"clusterIP":"10.0.0.10","ports":[{"name":"https","port":443,"targetPort":"https"}]}}`)
		case r.URL.Path == "/apis/discovery.k8s.io/v1/namespaces/wardle/endpointslices":
			switch r.URL.Query().Get("labelSelector") {
			case "kubernetes.io/service-name=api":
				io.WriteString(w, `{"items":[{"addressType":"IPv4","endpoints":[`+
					`{"addresses":["127.0.0.1"],"conditions":{"ready":true}},{"addresses":["127.0.0.2"],"conditions":{"ready":false}}],`+
					`"ports":[{"name":"https","port":8443}]}]}`)
			default:
				io.WriteString(w, `{"items":[]}`)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	cluster.Config.ErrorLog = log.New(io.Discard, "", 0)
	cluster.StartTLS()
	defer cluster.Close()
	k := certs.Kubeconfig{Server: cluster.URL, Token: "resolver-token",
		CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cluster.Certificate().Raw})}
	lister, err := NewServiceClient(k, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	endpoints, clusterIP := NewEndpointResolver(lister), NewClusterIPResolver(lister)
	for _, tc := range []struct {
		r      ServiceResolver
		svc    string
		want   string
		reason string
	}{
		{endpoints, "api", "https://127.0.0.1:8443", ""},
		{clusterIP, "api", "https://10.0.0.9:443", ""},
		{clusterIP, "named", "https://10.0.0.10:443", ""},
		{endpoints, "named", "", ReasonMissingEndpoints},
		{endpoints, "absent", "", ReasonServiceNotFound},
	} {
		u, err := tc.r.ResolveEndpoint("wardle", tc.svc, 443)
		if tc.reason != "" {
			if reasonFor(err) != tc.reason {
				t.Errorf("%s: %v, want %s", tc.svc, err, tc.reason)
			}
			continue
		}
		if err != nil || u.String() != tc.want {
			t.Errorf("%s: %v %v, want %s", tc.svc, u, err, tc.want)
		}
	}
	before := gets.Load()
	for range 10 {
		if _, err := endpoints.ResolveEndpoint("wardle", "api", 443); err != nil {
			t.Fatal(err)
		}
	}
	if n := gets.Load() - before; n != 0 {
		t.Errorf("%d requests to the cluster for answers it gave a moment ago", n)
	}

	// A static table in front of the cluster.
	chain := NewChainResolver(StaticResolver{"wardle/absent": "127.0.0.1:9443"}, endpoints)
	for svc, want := range map[string]string{"absent": "https://127.0.0.1:9443", "api": "https://127.0.0.1:8443"} {
		if u, err := chain.ResolveEndpoint("wardle", svc, 443); err != nil || u.String() != want {
			t.Errorf("chain %s: %v %v", svc, u, err)
		}
	}
	if _, err := chain.ResolveEndpoint("wardle", "nowhere", 443); reasonFor(err) != ReasonServiceNotFound || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("chain, unknown: %v", err)
	}
	bad, _ := NewServiceClient(certs.Kubeconfig{Server: cluster.URL, Token: "wrong", CAPEM: k.CAPEM}, 0)
	if _, err := NewClusterIPResolver(bad).ResolveEndpoint("wardle", "api", 443); reasonFor(err) != ReasonServiceAccessError || !strings.Contains(err.Error(), "401") {
		t.Errorf("refused: %v", err)
	}
	if _, err := NewServiceClient(certs.Kubeconfig{Server: "nope"}, 0); err == nil {
		t.Error("a server that is not a URL")
	}
}
