package server

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
)

var pingCheck = HealthCheck{Name: "ping", Check: func(*http.Request) error { return nil }}

// serveHealth answers /healthz, /livez or /readyz (and /<endpoint>/<check>)
// the way kube-apiserver does: "ok", or with ?verbose one line per check;
// failures are 500 and, unless verbose, withhold their reasons.
func serveHealth(endpoint string, checks func() []HealthCheck) http.HandlerFunc {
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
		var out bytes.Buffer
		failed := false
		for _, c := range all {
			if excluded[c.Name] {
				fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
				delete(excluded, c.Name)
				continue
			}
			if err := c.Check(r); err != nil {
				failed = true
				if verbose {
					fmt.Fprintf(&out, "[-]%s failed: %v\n", c.Name, err)
				} else {
					fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name)
				}
				continue
			}
			fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
		}
		for name := range excluded {
			fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %q\n", name)
		}
		if failed {
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
