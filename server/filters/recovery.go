package filters

import (
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server/respond"
)

// errPanic is what a client learns of a panic, in kube-apiserver's words.
var errPanic = errors.New("This request caused apiserver to panic. Look in the logs for details.")

// WithPanicRecovery turns a panic in a handler into a 500 Status and a log
// line with the stack, so one bad request cannot take the server down.
// http.ErrAbortHandler passes through: it is how a handler aborts a
// response on purpose.
func WithPanicRecovery(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				slog.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				// The panic value stays in the log: it may hold anything,
				// and kube-apiserver does not show it either.
				respond.Error(w, r, meta.NewInternalError(errPanic))
			}
		}()
		h.ServeHTTP(w, r)
	})
}
