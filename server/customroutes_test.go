package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/endpoints"
)

// TestCustomRoutes: routes a caller adds to a group-version (a streaming
// subresource, a computed one and a custom verb) are served behind the
// whole chain, authorized with their subresource, exempt from the request
// timeout when marked long-running (and only then), and listed by discovery
// and OpenAPI.
func TestCustomRoutes(t *testing.T) {
	const timeout = 300 * time.Millisecond
	var (
		mu    sync.Mutex
		asked []authz.Attributes
	)
	s := newServer(t, "routes", server.NewEmptyDelegate(), func(c *server.Config) {
		c.RequestTimeout = timeout
		c.Authorizer = authz.Func(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
			mu.Lock()
			defer mu.Unlock()
			if a.ResourceRequest {
				asked = append(asked, a)
			}
			return authz.DecisionAllow, "", nil
		})
	})
	g := widgetGroup(t, "a.example.com")
	g.Versions[0].Routes = func(ws *restful.WebService) {
		obj := "/namespaces/{namespace}/widgets/{name}"
		nsParam := ws.PathParameter("namespace", "the namespace").DataType("string")
		nameParam := ws.PathParameter("name", "the widget").DataType("string")
		// A stream that outlives the request timeout.
		ws.Route(endpoints.To(ws.GET(obj+"/log"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			for i := range 4 {
				fmt.Fprintf(w, "%s/%s line %d\n", r.PathValue("namespace"), r.PathValue("name"), i)
				w.(http.Flusher).Flush()
				select {
				case <-time.After(timeout / 2):
				case <-r.Context().Done():
					return
				}
			}
		})).Operation("readWidgetLog").Doc("stream the log of a Widget").Param(nsParam).Param(nameParam).
			Produces("text/plain").Returns(http.StatusOK, "OK", "").Metadata(endpoints.MetadataLongRunning, true))
		// A computed subresource that takes too long: not long-running.
		ws.Route(endpoints.To(ws.GET(obj+"/describe"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(30 * time.Second):
			case <-r.Context().Done():
			}
		})).Operation("describeWidget").Doc("describe a Widget").Param(nsParam).Param(nameParam).
			Produces("application/json").Returns(http.StatusOK, "OK", ""))
		// A custom verb.
		ws.Route(endpoints.To(ws.POST(obj+"/approve"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, "approved %s", r.PathValue("name"))
		})).Operation("approveWidget").Doc("approve a Widget").Param(nsParam).Param(nameParam).
			Produces("text/plain").Returns(http.StatusAccepted, "Accepted", ""))
	}
	if err := s.InstallAPIGroup(g); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler)
	t.Cleanup(hs.Close)
	const objURL = "/apis/a.example.com/v1/namespaces/ns/widgets/w"
	lastAsked := func() authz.Attributes {
		mu.Lock()
		defer mu.Unlock()
		if len(asked) == 0 {
			return authz.Attributes{}
		}
		return asked[len(asked)-1]
	}

	// The stream runs past the request timeout, line by line.
	resp, err := hs.Client().Get(hs.URL + objURL + "/log")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(lines) != 4 || lines[3] != "ns/w line 3" || time.Since(start) < timeout {
		t.Errorf("log: %d %q after %v", resp.StatusCode, lines, time.Since(start))
	}
	if a := lastAsked(); a.Verb != "get" || a.Resource != "widgets" || a.Subresource != "log" || a.Namespace != "ns" || a.Name != "w" {
		t.Errorf("log authorized as %+v", a)
	}

	// A route not marked long-running is bounded.
	resp, err = hs.Client().Get(hs.URL + objURL + "/describe")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("describe: %d %s, want 504", resp.StatusCode, b)
	}

	resp, err = hs.Client().Post(hs.URL+objURL+"/approve", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || string(b) != "approved w" {
		t.Errorf("approve: %d %s", resp.StatusCode, b)
	}
	if a := lastAsked(); a.Verb != "create" || a.Subresource != "approve" || a.Name != "w" {
		t.Errorf("approve authorized as %+v", a)
	}

	// Discovery lists each subresource with the verbs of its methods.
	var list meta.APIResourceList
	if err := json.Unmarshal(get(t, s.Handler, "/apis/a.example.com/v1", "").Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	verbs := map[string]string{}
	for _, r := range list.APIResources {
		verbs[r.Name] = strings.Join(r.Verbs, ",") + "/" + r.Kind
	}
	for name, want := range map[string]string{
		"widgets/status":   "get,patch,update/Widget",
		"widgets/log":      "get/Widget",
		"widgets/describe": "get/Widget",
		"widgets/approve":  "create/Widget",
	} {
		if verbs[name] != want {
			t.Errorf("discovery %s: %q, want %q (all: %v)", name, verbs[name], want, verbs)
		}
	}
	agg := get(t, s.Handler, "/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").Body.String()
	for _, sub := range []string{`"subresource":"log"`, `"subresource":"approve"`, `"subresource":"status"`} {
		if !strings.Contains(agg, sub) {
			t.Errorf("aggregated discovery lacks %s: %.500s", sub, agg)
		}
	}
	// OpenAPI documents them.
	docs, err := s.OpenAPIDocuments()
	if err != nil {
		t.Fatal(err)
	}
	v2 := string(docs.V2JSON())
	for _, p := range []string{
		`"/apis/a.example.com/v1/namespaces/{namespace}/widgets/{name}/log"`,
		`"operationId":"approveWidget"`,
	} {
		if !strings.Contains(v2, p) {
			t.Errorf("OpenAPI v2 lacks %s", p)
		}
	}
}
