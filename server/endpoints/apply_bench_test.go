package endpoints_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/storage/memory"
)

// BenchmarkWriteFlunder serves writes of one Flunder on memory storage
// through the REST handlers: an update (PUT) without managedFields (a scope
// without a schema, as before server-side apply) and with them recorded,
// and a server-side apply changing one field. The ratio of the first two is
// what managedFields cost a plain update (docs/benchmarks.md).
//
//	go test ./server/endpoints -run - -bench WriteFlunder -count 5
func BenchmarkWriteFlunder(b *testing.B) {
	handler := func(b *testing.B, withSchema bool) http.Handler {
		st := benchStore(b, memory.New())
		fillFlunders(b, st, 1)
		scope := &endpoints.Scope{Resource: registry.Serve(st)}
		if withSchema {
			set := schema.NewSet()
			shape, err := set.AddType(reflect.TypeOf(scope.Resource.New()))
			if err != nil {
				b.Fatal(err)
			}
			scope.Schemas, scope.Schema = set, shape
		}
		c := restful.NewContainer()
		ws := new(restful.WebService).Path("/apis/wardle.example.com/v1beta1")
		endpoints.Install(ws, scope)
		c.Add(ws)
		return c
	}
	write := func(b *testing.B, h http.Handler, method, contentType, path, body string) string {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		r.Header.Set("User-Agent", "bench/v1")
		w := &countingWriter{header: http.Header{}}
		h.ServeHTTP(w, r)
		if w.code != http.StatusOK {
			b.Fatalf("%s %s: %d %s", method, path, w.code, w.first)
		}
		// The next PUT's precondition: resourceVersion is near the start.
		_, rest, _ := strings.Cut(string(w.first), `"resourceVersion":"`)
		rv, _, _ := strings.Cut(rest, `"`)
		return rv
	}
	const obj = flundersPath + "/flunder-00000"
	put := func(i int, rv string) string {
		return fmt.Sprintf(`{"apiVersion":"wardle.example.com/v1beta1","kind":"Flunder","metadata":{"name":"flunder-00000","namespace":"bench","resourceVersion":"%s","labels":{"app":"bench","index":"0"}},"spec":{"flunderReference":"ref-%d","referenceType":"Flunder"}}`, rv, i)
	}
	for _, tc := range []struct {
		name       string
		withSchema bool
	}{{"update", false}, {"update+managedFields", true}} {
		b.Run(tc.name, func(b *testing.B) {
			h := handler(b, tc.withSchema)
			rv := write(b, h, "PATCH", "application/merge-patch+json", obj, `{}`)
			b.ReportAllocs()
			i := 0
			loop(b, func() {
				rv = write(b, h, "PUT", "application/json", obj, put(i, rv))
				i++
			})
		})
	}
	b.Run("apply", func(b *testing.B) {
		h := handler(b, true)
		b.ReportAllocs()
		i := 0
		loop(b, func() {
			write(b, h, "PATCH", "application/apply-patch+yaml", obj+"?fieldManager=bench",
				fmt.Sprintf(`{"apiVersion":"wardle.example.com/v1beta1","kind":"Flunder","metadata":{"name":"flunder-00000"},"spec":{"flunderReference":"ref-%d"}}`, i))
			i++
		})
	})
}
