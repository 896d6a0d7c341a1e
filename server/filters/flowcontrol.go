package filters

import (
	"net/http"
	"sync"

	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/respond"
)

// WithFlowControl asks fc whether and when each request may run, and
// answers the refused ones with fc's Status (429 with Retry-After). A
// watch gives its share back once its initial events are sent (the watch
// handler calls request.SignalWatchInit); other long-running requests
// (proxy, exec) are not limited, as in kube-apiserver.
func WithFlowControl(h http.Handler, fc flowcontrol.Interface, longRunning func(*request.Info) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := request.InfoFrom(r.Context())
		watch := ok && info.Verb == "watch"
		if ok && !watch && longRunning != nil && longRunning(info) {
			h.ServeHTTP(w, r)
			return
		}
		done, err := fc.Admit(w, r)
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		if !watch {
			defer done()
			h.ServeHTTP(w, r)
			return
		}
		var once sync.Once
		release := func() { once.Do(done) }
		defer release()
		h.ServeHTTP(w, r.WithContext(request.WithWatchInitSignal(r.Context(), release)))
	})
}
