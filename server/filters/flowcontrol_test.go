package filters_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/filters"
)

// countingPolicy admits up to limit requests at once.
type countingPolicy struct {
	limit, inFlight int
}

func (p *countingPolicy) Admit(w http.ResponseWriter, r *http.Request) (func(), error) {
	if p.inFlight == p.limit {
		return nil, meta.NewTooManyRequests("Too many requests, please try again later.", 1)
	}
	p.inFlight++
	w.Header().Set("X-Policy", "seen")
	return func() { p.inFlight-- }, nil
}

var _ flowcontrol.Interface = (*countingPolicy)(nil)

func serveWith(h http.Handler, method, target string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	ctx := request.WithInfo(authn.WithUser(r.Context(), &authn.User{Name: "u"}), request.DefaultResolver.Resolve(r))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r.WithContext(ctx))
	return w
}

func TestWithFlowControl(t *testing.T) {
	p := &countingPolicy{limit: 1}
	var during int
	var inner http.Handler
	h := filters.WithFlowControl(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		during = p.inFlight
		if inner != nil {
			inner.ServeHTTP(w, r)
		}
	}), p, func(i *request.Info) bool { return i.IsLongRunning() })

	// Served inside the policy's share, released after.
	w := serveWith(h, "GET", "/api/v1/pods")
	if w.Code != http.StatusOK || during != 1 || p.inFlight != 0 || w.Header().Get("X-Policy") != "seen" {
		t.Fatalf("code %d, in flight during %d after %d, headers %v", w.Code, during, p.inFlight, w.Header())
	}

	// Refused: a 429 Status with Retry-After.
	p.inFlight = 1
	w = serveWith(h, "GET", "/api/v1/pods")
	var st meta.Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" || st.Reason != meta.StatusReasonTooManyRequests {
		t.Fatalf("refusal: %d, Retry-After %q, %+v", w.Code, w.Header().Get("Retry-After"), st)
	}
	p.inFlight = 0

	// A watch gives its share back once initialised, not when it ends.
	var afterInit int
	inner = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		request.SignalWatchInit(r.Context())
		request.SignalWatchInit(r.Context()) // twice is harmless
		afterInit = p.inFlight
	})
	serveWith(h, "GET", "/api/v1/pods?watch=1")
	if during != 1 || afterInit != 0 || p.inFlight != 0 {
		t.Fatalf("watch: in flight %d while initialising, %d after, %d at the end", during, afterInit, p.inFlight)
	}

	// Other long-running requests are not limited.
	p.inFlight = 1
	inner = nil
	if w := serveWith(h, "GET", "/api/v1/namespaces/a/pods/p/exec"); w.Code != http.StatusOK {
		t.Fatalf("exec: %d", w.Code)
	}
}
