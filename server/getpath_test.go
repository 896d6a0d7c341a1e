package server_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/apikit-dev/apikit/internal/race"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/filters"
)

// TestServeGetAllocations counts the allocations of a GET of one widget
// through a whole server (the filter chain, routing, the handler, the
// memory backend's memo), as BenchmarkServeGet serves it: 46 before the
// seventh session's cuts (the request info's segments and verb, the
// timeout filter's hand-off, Accept without parameters, log values of a
// request not logged, the impersonation parse of a request that
// impersonates nobody), 34 since (the timeout filter's writer is the request's own).
func TestServeGetAllocations(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates on its own")
	}
	s := newServer(t, "allocs", server.NewEmptyDelegate())
	if err := s.InstallAPIGroup(widgetGroup(t, "example.com")); err != nil {
		t.Fatal(err)
	}
	post := httptest.NewRequest("POST", "/apis/example.com/v1/namespaces/ns/widgets", strings.NewReader(`{"metadata":{"name":"w1"}}`))
	post.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.Handler.ServeHTTP(rec, post)
	if rec.Code != http.StatusCreated {
		t.Fatal(rec.Code, rec.Body.String())
	}
	r := httptest.NewRequest("GET", "/apis/example.com/v1/namespaces/ns/widgets/w1", nil)
	r.Header.Set("Accept", "application/json")
	w := &discardWriter{header: http.Header{}}
	get := func() {
		clear(w.header)
		w.code = 0
		s.Handler.ServeHTTP(w, r)
	}
	get()
	if w.code != http.StatusOK {
		t.Fatal(w.code)
	}
	if allocs := testing.AllocsPerRun(200, get); allocs > 34 {
		t.Errorf("%v allocations per GET, want at most 34", allocs)
	}
}

// TestGetLogLine: a logged request's line carries the user and the
// priority level that the filters below the log filter found.
func TestGetLogLine(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	s := newServer(t, "logs", server.NewEmptyDelegate(), func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: filters.LevelHTTP}))
	})
	if err := s.InstallAPIGroup(widgetGroup(t, "example.com")); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/apis/example.com/v1/namespaces/ns/widgets/w1", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("GET: %d %s", rec.Code, rec.Body.String())
	}
	mu.Lock()
	defer mu.Unlock()
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil || m["msg"] != "HTTP" {
			continue
		}
		if m["user"] != "tester" || m["apf_pl"] == nil || m["apf_fs"] == nil {
			t.Errorf("the HTTP line lacks the user or the priority level: %s", line)
		}
		return
	}
	t.Fatalf("no HTTP line in the log:\n%s", buf.String())
}

// lockedWriter serializes writes of concurrent requests' log lines.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
