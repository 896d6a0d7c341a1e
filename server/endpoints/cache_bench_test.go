package endpoints_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/apikit-dev/apikit/examples/wardle/apis/v1beta1"
	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/internal/proccpu"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/cacher"
	"github.com/apikit-dev/apikit/storage/etcd3"
	"github.com/apikit-dev/apikit/storage/memory"
)

// The benchmarks below serve Flunders of the wardle example, shaped as the
// load benchmark (bench/) creates them, through the registry and the REST
// handlers, from each backend alone and with a watch cache in front.

var flunders = meta.GroupResource{Group: "wardle.example.com", Resource: "flunders"}

const flundersPath = "/apis/wardle.example.com/v1beta1/namespaces/bench/flunders"

type benchBackend struct {
	name string
	new  func(b *testing.B) storage.Interface
}

// benchBackends returns memory and etcd, each alone and behind a cache of
// the flunders' keys. etcd starts on first use and lives as long as b.
func benchBackends(b *testing.B) []benchBackend {
	var (
		once   sync.Once
		client *clientv3.Client
		n      int
	)
	etcd := func() storage.Interface {
		once.Do(func() {
			c, err := clientv3.New(clientv3.Config{Endpoints: etcdtest.Start(b), DialTimeout: 10 * time.Second, Logger: etcd3.ZapLogger(nil, nil)})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			client = c
		})
		n++
		return etcd3.New(client, etcd3.WithPrefix(fmt.Sprintf("/bench-%d", n)))
	}
	cached := func(sb *testing.B, s storage.Interface) storage.Interface {
		c := cacher.New(s, storage.KeyRoot(flunders))
		sb.Cleanup(func() { c.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.WaitReady(ctx); err != nil {
			sb.Fatal(err)
		}
		return c
	}
	closing := func(sb *testing.B, s storage.Interface) storage.Interface {
		sb.Cleanup(func() { s.Close() })
		return s
	}
	return []benchBackend{
		{"memory", func(sb *testing.B) storage.Interface { return closing(sb, memory.New()) }},
		{"cache/memory", func(sb *testing.B) storage.Interface { return cached(sb, closing(sb, memory.New())) }},
		{"etcd", func(sb *testing.B) storage.Interface { return closing(sb, etcd()) }},
		{"cache/etcd", func(sb *testing.B) storage.Interface { return cached(sb, closing(sb, etcd())) }},
	}
}

// benchStore is the wardle Flunder store on s.
func benchStore(b testing.TB, s storage.Interface) *registry.Store[*v1beta1.Flunder] {
	st, err := registry.NewStore(registry.Options[*v1beta1.Flunder]{
		Resource:        flunders,
		Kind:            "Flunder",
		NamespaceScoped: true,
		StorageVersion:  "v1beta1",
		Strategy:        registry.DefaultStrategy[*v1beta1.Flunder]{},
		Storage:         s,
	})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// benchFlunder is the i-th Flunder as the load benchmark creates it.
func benchFlunder(i int) *v1beta1.Flunder {
	t := v1beta1.FlunderReferenceType
	return &v1beta1.Flunder{
		TypeMeta: meta.TypeMeta{APIVersion: "wardle.example.com/v1beta1", Kind: "Flunder"},
		ObjectMeta: meta.ObjectMeta{Name: fmt.Sprintf("flunder-%05d", i), Namespace: "bench",
			Labels: map[string]string{"app": "bench", "index": strconv.Itoa(i)}},
		Spec: v1beta1.FlunderSpec{FlunderReference: fmt.Sprintf("flunder-ref-%05d", i), ReferenceType: &t},
	}
}

// fillFlunders creates n Flunders with 16 writers.
func fillFlunders(b *testing.B, st *registry.Store[*v1beta1.Flunder], n int) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if _, err := st.Create(ctx, "bench", benchFlunder(i), registry.WriteOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// benchHandler routes the store's v1beta1 REST paths, as a server does
// (filters aside).
func benchHandler(st *registry.Store[*v1beta1.Flunder]) http.Handler {
	c := restful.NewContainer()
	ws := new(restful.WebService).Path("/apis/wardle.example.com/v1beta1")
	endpoints.Install(ws, &endpoints.Scope{Resource: registry.Serve(st), OmitItemTypes: true})
	c.Add(ws)
	return c
}

// countingWriter is a ResponseWriter that keeps only the size of what it
// is sent, as a connection would: the benchmarks measure the server, not
// a recorder's growing buffer.
type countingWriter struct {
	header http.Header
	code   int
	n      int
	first  []byte // the start of the body, for error messages
}

func (w *countingWriter) Header() http.Header  { return w.header }
func (w *countingWriter) WriteHeader(code int) { w.code = code }
func (w *countingWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if len(w.first) < headBytes {
		w.first = append(w.first, p[:min(len(p), headBytes-len(w.first))]...)
	}
	w.n += len(p)
	return len(p), nil
}

// headBytes is how much of a response countingWriter keeps: enough for a
// list's metadata, which comes first.
const headBytes = 1024

// serveHead serves path and returns the start of the response.
func serveHead(b *testing.B, h http.Handler, path string) []byte {
	r := httptest.NewRequest("GET", path, nil)
	w := &countingWriter{header: http.Header{}}
	h.ServeHTTP(w, r)
	if w.code != http.StatusOK {
		b.Fatalf("GET %s: %d %s", path, w.code, w.first)
	}
	return w.first
}

// continueToken reads metadata.continue from the start of a list.
func continueToken(b *testing.B, head []byte) string {
	_, rest, ok := bytes.Cut(head, []byte(`"continue":`))
	if !ok {
		return ""
	}
	end := bytes.IndexByte(rest[1:], '"')
	if end < 0 {
		b.Fatalf("continue token cut off in %s", head)
	}
	var token string
	if err := json.Unmarshal(rest[:end+2], &token); err != nil {
		b.Fatalf("continue token in %s: %v", head, err)
	}
	return token
}

func serve(b *testing.B, h http.Handler, path string) int {
	r := httptest.NewRequest("GET", path, nil)
	w := &countingWriter{header: http.Header{}}
	h.ServeHTTP(w, r)
	if w.code != http.StatusOK {
		b.Fatalf("GET %s: %d %s", path, w.code, w.first)
	}
	if cl := w.header.Get("Content-Length"); cl != strconv.Itoa(w.n) {
		b.Fatalf("GET %s: Content-Length %s for %d bytes", path, cl, w.n)
	}
	return w.n
}

// loop runs op b.N times and reports the process's CPU time per op
// (etcd's is not counted: it runs apart), the figure the load benchmark
// compares servers by.
func loop(b *testing.B, op func()) {
	start := proccpu.Used()
	for b.Loop() {
		op()
	}
	if cpu := proccpu.Used() - start; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkListFlunders5000 serves a full LIST of 5,000 Flunders
// (resourceVersion "", a consistent read) and a page of 500.
func BenchmarkListFlunders5000(b *testing.B) {
	for _, bk := range benchBackends(b) {
		b.Run(bk.name, func(b *testing.B) {
			st := benchStore(b, bk.new(b))
			fillFlunders(b, st, 5000)
			h := benchHandler(st)
			for _, q := range []struct{ name, query string }{{"full", ""}, {"limit=500", "?limit=500"}} {
				b.Run(q.name, func(b *testing.B) {
					size := serve(b, h, flundersPath+q.query)
					b.SetBytes(int64(size))
					b.ReportAllocs()
					loop(b, func() { serve(b, h, flundersPath+q.query) })
				})
			}
			// All of it in pages of 500, following the continue tokens,
			// as kubectl --chunk-size=500 and the load benchmark do.
			b.Run("paged", func(b *testing.B) {
				b.ReportAllocs()
				loop(b, func() {
					query := "?limit=500"
					for pages := 0; ; pages++ {
						if pages > 10 {
							b.Fatal("more than 11 pages of 500 for 5000 objects")
						}
						token := continueToken(b, serveHead(b, h, flundersPath+query))
						if token == "" {
							return
						}
						query = "?limit=500&continue=" + url.QueryEscape(token)
					}
				})
			})
		})
	}
}

// BenchmarkGetFlunder serves a GET of one Flunder (resourceVersion "").
func BenchmarkGetFlunder(b *testing.B) {
	for _, bk := range benchBackends(b) {
		b.Run(bk.name, func(b *testing.B) {
			st := benchStore(b, bk.new(b))
			const n = 1000
			fillFlunders(b, st, n)
			h := benchHandler(st)
			paths := make([]string, n)
			for i := range paths {
				paths[i] = fmt.Sprintf("%s/flunder-%05d", flundersPath, i)
			}
			b.Run("serial", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				loop(b, func() {
					serve(b, h, paths[i%n])
					i++
				})
			})
			b.Run("parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(8) // 16 clients on 2 cores, as the load benchmark's workers
				start := proccpu.Used()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						serve(b, h, paths[i%n])
						i++
					}
				})
				if cpu := proccpu.Used() - start; cpu > 0 {
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
				}
			})
		})
	}
}

// BenchmarkWatchFlunders1000 delivers one update to 1,000 watches of the
// registry, each encoding its event as the watch handler does: the time
// from the write until every watch has the event's JSON.
func BenchmarkWatchFlunders1000(b *testing.B) {
	const watchers = 1000
	for _, bk := range benchBackends(b) {
		b.Run(bk.name, func(b *testing.B) {
			st := benchStore(b, bk.new(b))
			res := registry.Serve(st)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			created, err := st.Create(ctx, "bench", benchFlunder(0), registry.WriteOptions{})
			if err != nil {
				b.Fatal(err)
			}
			got := make(chan struct{}, watchers)
			var wg sync.WaitGroup
			for range watchers {
				events, err := res.Watch(ctx, "bench", meta.ListOptions{ResourceVersion: created.ResourceVersion})
				if err != nil {
					b.Fatal(err)
				}
				wg.Go(func() {
					for ev := range events {
						if ev.Type != meta.Modified {
							continue
						}
						if _, err := ev.Item.JSON(); err != nil {
							panic(err)
						}
						got <- struct{}{}
					}
				})
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, _, err := st.Update(ctx, "bench", "flunder-00000", func(_ context.Context, cur *v1beta1.Flunder) (*v1beta1.Flunder, error) {
					cur.Labels["index"] = strconv.Itoa(i)
					return cur, nil
				}, registry.UpdateOptions{}); err != nil {
					b.Fatal(err)
				}
				for range watchers {
					<-got
				}
			}
			b.StopTimer()
			cancel()
			wg.Wait()
		})
	}
}
