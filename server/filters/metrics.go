package filters

import (
	"net/http"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/request"
)

// WithMetrics counts and times every request under kube-apiserver's metric
// names (apiserver_request_total, apiserver_request_duration_seconds,
// apiserver_response_sizes, apiserver_current_inflight_requests,
// apiserver_longrunning_requests). It sits right after WithRequestInfo, so
// that requests refused by any later filter (401, 403, 429, 504) are
// counted too. Group, version, resource and subresource are only labels
// when the request reached a route (metrics.MarkRouted): a request refused
// before routing, or for a path nothing serves, has them empty, so a client
// cannot make a series per made-up path. Verbs outside kube-apiserver's set
// are "other".
func WithMetrics(h http.Handler, m *metrics.Registry, longRunning func(*request.Info) bool) http.Handler {
	if m == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := request.InfoFrom(r.Context())
		if info == nil {
			h.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		mw := &metricsWriter{ResponseWriter: w, m: m, info: info, r: r}
		mw.route.Registry = m
		if longRunning(info) {
			mw.longRunning = true
		} else {
			g := m.Inflight(info.IsMutating())
			g.Inc()
			defer g.Dec()
		}
		defer func() {
			p := recover()
			if mw.longRunningDone != nil {
				mw.longRunningDone()
			}
			code := mw.status
			switch {
			case p != nil && code == 0:
				// The recovery filter outside answers 500.
				code = http.StatusInternalServerError
			case code == 0:
				code = http.StatusOK
			}
			m.ObserveRequest(mw.labels(), code, mw.written, time.Since(start))
			if p != nil {
				panic(p)
			}
		}()
		h.ServeHTTP(mw, r.WithContext(metrics.WithRoute(r.Context(), &mw.route)))
	})
}

// metricsWriter notes the code and size of a response; a long-running
// request counts as active from when its response starts, by then its
// route (hence its labels) is known.
type metricsWriter struct {
	http.ResponseWriter
	m               *metrics.Registry
	info            *request.Info
	r               *http.Request
	route           metrics.Route
	status          int
	written         int64
	longRunning     bool
	longRunningDone func()
	lbl             metrics.Labels
	lblSet          bool
}

func (mw *metricsWriter) WriteHeader(code int) {
	if mw.status == 0 {
		mw.status = code
		if mw.longRunning {
			mw.longRunningDone = mw.m.LongRunningStarted(mw.labels())
		}
	}
	mw.ResponseWriter.WriteHeader(code)
}

func (mw *metricsWriter) Write(b []byte) (int, error) {
	if mw.status == 0 {
		mw.WriteHeader(http.StatusOK)
	}
	n, err := mw.ResponseWriter.Write(b)
	mw.written += int64(n)
	return n, err
}

// Flush passes flushes through, so that watches stream.
func (mw *metricsWriter) Flush() {
	if mw.status == 0 {
		mw.WriteHeader(http.StatusOK)
	}
	if f, ok := mw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer
// (hijacking for exec and port-forward, deadlines).
func (mw *metricsWriter) Unwrap() http.ResponseWriter { return mw.ResponseWriter }

// labels computes the request's labels once; the route must be known by
// then (the response has started, or the handler returned).
func (mw *metricsWriter) labels() *metrics.Labels {
	if !mw.lblSet {
		mw.lbl, mw.lblSet = requestLabels(mw.r, mw.info, &mw.route), true
	}
	return &mw.lbl
}

// requestLabels are kube-apiserver's labels for a request: the verb as its
// metrics name it (create is POST, update PUT, a server-side apply APPLY),
// the scope as its CleanScope has it, path-derived labels only once routed.
func requestLabels(r *http.Request, info *request.Info, route *metrics.Route) metrics.Labels {
	routed, path := route.Routed()
	if !info.IsResourceRequest {
		l := metrics.Labels{Verb: nonResourceVerb(r.Method)}
		if routed {
			l.Subresource = path
		}
		return l
	}
	l := metrics.Labels{
		Verb:      resourceVerb(r, info),
		DryRun:    dryRun(r),
		Scope:     scope(info),
		Component: metrics.Component,
	}
	if routed {
		l.Group, l.Version, l.Resource, l.Subresource = info.APIGroup, info.APIVersion, info.Resource, info.Subresource
	}
	return l
}

func resourceVerb(r *http.Request, info *request.Info) string {
	switch info.Verb {
	case "get":
		return "GET"
	case "list":
		return "LIST"
	case "watch":
		return "WATCH"
	case "create":
		return "POST"
	case "update":
		return "PUT"
	case "patch":
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			return "APPLY"
		}
		return "PATCH"
	case "delete":
		return "DELETE"
	case "deletecollection":
		return "DELETECOLLECTION"
	case "connect":
		return "CONNECT"
	case "proxy":
		return "PROXY"
	}
	return metrics.OtherVerb
}

func nonResourceVerb(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "GET"
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return method
	}
	return metrics.OtherVerb
}

// scope is kube-apiserver's CleanScope.
func scope(info *request.Info) string {
	switch {
	case info.Name != "" || info.Verb == "create":
		return "resource"
	case info.Namespace != "":
		return "namespace"
	}
	return "cluster"
}

// dryRun is "" without ?dryRun, "All" with only that value (the one kube
// accepts), "invalid" with anything else: a bounded label whatever the
// client sends.
func dryRun(r *http.Request) string {
	if !strings.Contains(r.URL.RawQuery, "dryRun") {
		return ""
	}
	vals := request.Query(r)["dryRun"]
	if len(vals) == 0 {
		return ""
	}
	for _, v := range vals {
		if v != "All" {
			return "invalid"
		}
	}
	return "All"
}
