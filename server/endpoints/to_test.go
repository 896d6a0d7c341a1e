package endpoints_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/server/endpoints"
)

// TestToServesThroughAContainer: a route given its handler with To keeps
// it once, in its metadata, and a restful.Container serving the
// WebService reaches it too, with the path's wildcards as PathValues.
func TestToServesThroughAContainer(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.PathValue("namespace")+"/"+r.PathValue("name"))
	})
	ws := new(restful.WebService).Path("/apis/g/v")
	ws.Route(endpoints.To(ws.GET("/namespaces/{namespace}/things/{name}/log"), h))
	if _, ok := ws.Routes()[0].Metadata[endpoints.MetadataHandler].(http.Handler); !ok {
		t.Fatal("the route's handler is not in its metadata")
	}
	c := restful.NewContainer()
	c.Add(ws)
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest("GET", "/apis/g/v/namespaces/ns/things/a/log", nil))
	if rec.Code != 200 || rec.Body.String() != "ns/a" {
		t.Errorf("%d %q", rec.Code, rec.Body)
	}
}
