package server

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/apikit-dev/apikit/metrics"
)

var pingCheck = HealthCheck{Name: "ping", Check: func(*http.Request) error { return nil }}

// serveHealth answers /healthz, /livez or /readyz (and /<endpoint>/<check>)
// the way kube-apiserver does: "ok", or with ?verbose one line per check.
// A failure is 500 and lists every check, but the endpoint is public (the
// authentication filter lets anyone in), so a failing check's error is
// "reason withheld" there, verbose or not, and goes to log instead. Its
// error text is served only at /<endpoint>/<check>, which, not being
// public, only a user the authorizer allows reads.
//
// Each check run there is recorded for /metrics/slis
// (kubernetes_healthcheck, kubernetes_healthchecks_total), as
// kube-apiserver records it.
func serveHealth(endpoint string, checks func() []HealthCheck, m *metrics.Registry, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		all := checks()
		if name := strings.TrimPrefix(r.URL.Path, "/"+endpoint+"/"); name != r.URL.Path && name != "" {
			for _, c := range all {
				if c.Name == name {
					if err := c.Check(r); err != nil {
						http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
						return
					}
					writeText(w, http.StatusOK, "ok")
					return
				}
			}
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		_, verbose := q["verbose"]
		excluded := map[string]bool{}
		for _, e := range q["exclude"] {
			excluded[e] = true
		}
		var out, details bytes.Buffer
		var failed []string
		for _, c := range all {
			if excluded[c.Name] {
				fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
				delete(excluded, c.Name)
				continue
			}
			err := c.Check(r)
			m.ObserveHealthCheck(c.Name, endpoint, err == nil)
			if err != nil {
				failed = append(failed, c.Name)
				fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name)
				fmt.Fprintf(&details, "[-]%s failed: %v\n", c.Name, err)
				continue
			}
			fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
		}
		if len(excluded) > 0 {
			unknown := make([]string, 0, len(excluded))
			for name := range excluded {
				unknown = append(unknown, strconv.Quote(name))
			}
			slices.Sort(unknown)
			fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(unknown, ","))
		}
		if len(failed) > 0 {
			log.Info("health check failed", "endpoint", endpoint, "checks", strings.Join(failed, ","), "details", details.String())
			fmt.Fprintf(&out, "%s check failed\n", endpoint)
			writeText(w, http.StatusInternalServerError, out.String())
			return
		}
		if !verbose {
			writeText(w, http.StatusOK, "ok")
			return
		}
		fmt.Fprintf(&out, "%s check passed\n", endpoint)
		writeText(w, http.StatusOK, out.String())
	}
}

func writeText(w http.ResponseWriter, code int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(s))
}
