package wardleapi

import (
	"fmt"
	"io"
	"net/http"
	"strconv"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/examples/wardle/apis/v1beta1"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/server/respond"
)

// flunderRoutes adds the changes subresource of flunders to v1beta1's
// WebService: a route of wardle's own, behind the server's whole filter
// chain, in discovery and OpenAPI.
//
//	kubectl get --raw /apis/wardle.example.com/v1beta1/namespaces/<ns>/flunders/<name>/changes
//
// prints the flunder's current version as a line of text; with ?follow=true
// the stream goes on with a line per change until the client leaves or the
// flunder is deleted. It is long-running: exempt from the request timeout,
// holding no flow-control seat.
func (a *API) flunderRoutes(ws *restful.WebService) {
	ws.Route(endpoints.To(ws.GET("/namespaces/{namespace}/flunders/{name}/changes"), http.HandlerFunc(a.serveChanges)).
		Operation("readWardleExampleComV1beta1NamespacedFlunderChanges").
		Doc("stream the changes of the specified Flunder as lines of text").
		Param(ws.PathParameter("namespace", "object name and auth scope, such as for teams and projects").DataType("string")).
		Param(ws.PathParameter("name", "name of the Flunder").DataType("string")).
		Param(ws.QueryParameter("follow", "Follow the changes until the client leaves or the Flunder is deleted.").DataType("boolean")).
		Produces("text/plain").
		Returns(http.StatusOK, "OK", "").
		Metadata(endpoints.MetadataTag, "wardleexamplecom_v1beta1").
		Metadata(endpoints.MetadataLongRunning, true))
}

// serveChanges writes the flunder's versions as "<resourceVersion> <event>
// <name> reference=<reference>" lines.
func (a *API) serveChanges(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	f, _, err := a.Flunders.Get(r.Context(), ns, name, meta.GetOptions{})
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	follow, _ := strconv.ParseBool(r.URL.Query().Get("follow"))
	var events <-chan registry.Event[*v1beta1.Flunder]
	if follow {
		// Watched from the version just read: no change is missed.
		ch, err := a.Flunders.Watch(r.Context(), ns, meta.ListOptions{
			Watch: true, ResourceVersion: f.ResourceVersion, FieldSelector: "metadata.name=" + name,
		})
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		events = ch
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	flusher, _ := w.(http.Flusher)
	writeChange(w, "CURRENT", f)
	if !follow {
		return
	}
	if flusher != nil {
		flusher.Flush()
	}
	for ev := range events {
		switch ev.Type {
		case meta.Bookmark:
			continue
		case meta.Error:
			fmt.Fprintf(w, "error: %v\n", ev.Err)
			return
		}
		writeChange(w, string(ev.Type), ev.Object)
		if flusher != nil {
			flusher.Flush()
		}
		if ev.Type == meta.Deleted {
			return
		}
	}
}

func writeChange(w io.Writer, event string, f *v1beta1.Flunder) {
	ref := f.Spec.FlunderReference
	if ref == "" {
		ref = f.Spec.FischerReference
	}
	fmt.Fprintf(w, "%s %s %s reference=%s\n", f.ResourceVersion, event, f.Name, ref)
}
