package filters

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/apikit-dev/apikit/request"
)

// LevelHTTP is the level of the line WithHTTPLogging writes per request:
// kube-apiserver writes its "HTTP" line at -v=3, and apikit maps -v=N to
// slog level -N (see options.LogsOptions).
const LevelHTTP = slog.Level(-3)

// WithHTTPLogging writes one structured line per request, when logger is
// enabled at LevelHTTP, with kube-apiserver's keys: verb, URI, latency,
// userAgent, audit-ID, srcIP and resp (the status code), plus what the
// filters below add with request.AddLogValues (user, apf_pl, apf_fs).
// Headers and bodies are never logged, so no credential reaches the log.
// When the level is off the filter costs one Enabled call.
func WithHTTPLogging(h http.Handler, logger *slog.Logger) http.Handler {
	if logger == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !logger.Enabled(r.Context(), LevelHTTP) {
			h.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		ctx, values := request.WithLogValues(r.Context())
		lw := &statusWriter{ResponseWriter: w}
		userAgent := r.UserAgent()
		defer func() {
			p := recover()
			status := lw.status
			switch {
			case p != nil && status == 0:
				status = http.StatusInternalServerError
			case status == 0:
				status = http.StatusOK
			}
			logRequest(ctx, logger, r, lw, status, userAgent, time.Since(start), values)
			if p != nil {
				panic(p)
			}
		}()
		h.ServeHTTP(lw, r.WithContext(ctx))
	})
}

func logRequest(ctx context.Context, logger *slog.Logger, r *http.Request, lw *statusWriter, status int, userAgent string, latency time.Duration, values *request.LogValues) {
	verb := nonResourceVerb(r.Method)
	attrs := make([]slog.Attr, 0, 12)
	if info, ok := request.InfoFrom(r.Context()); ok && info.IsResourceRequest {
		verb = resourceVerb(r, info)
		resource := info.Resource
		if info.APIGroup != "" {
			resource += "." + info.APIGroup
		}
		if info.Subresource != "" {
			resource += "/" + info.Subresource
		}
		attrs = append(attrs, slog.String("resource", resource))
	}
	attrs = append(attrs,
		slog.String("verb", verb),
		slog.String("URI", r.RequestURI),
		slog.Duration("latency", latency),
		slog.String("userAgent", userAgent),
		slog.String("audit-ID", lw.Header().Get(AuditIDHeader)),
		slog.String("srcIP", r.RemoteAddr),
	)
	attrs = append(attrs, slog.Int("resp", status))
	kv := values.Values()
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok {
			attrs = append(attrs, slog.Any(k, kv[i+1]))
		}
	}
	logger.LogAttrs(ctx, LevelHTTP, "HTTP", attrs...)
}

// statusWriter notes the response's status code, for the log line and the span.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (lw *statusWriter) WriteHeader(code int) {
	if lw.status == 0 {
		lw.status = code
	}
	lw.ResponseWriter.WriteHeader(code)
}

func (lw *statusWriter) Write(b []byte) (int, error) {
	if lw.status == 0 {
		lw.status = http.StatusOK
	}
	return lw.ResponseWriter.Write(b)
}

// Flush passes flushes through, so that watches stream.
func (lw *statusWriter) Flush() {
	if lw.status == 0 {
		lw.status = http.StatusOK
	}
	if f, ok := lw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer
// (hijacking for upgrades, deadlines).
func (lw *statusWriter) Unwrap() http.ResponseWriter { return lw.ResponseWriter }
