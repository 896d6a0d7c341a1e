package openapi

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server/respond"
)

// V2Handler serves the Swagger 2.0 document (/openapi/v2) as JSON.
//
// kube-apiserver also serves it as protobuf, which is what client-go's
// OpenAPISchema asks for; apikit answers a request that accepts only
// protobuf with 406, and kubectl, which reads OpenAPI v3 first (explain,
// field validation, apply), does not need it.
func (d *Documents) V2Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, d.v2, false)
	})
}

// V3Handler serves /openapi/v3, the index of the OpenAPI 3.0 documents, and
// /openapi/v3/<path>, each document. A document requested with the hash the
// index gives is immutable and cached as such; with an older hash the
// client is redirected to the current one, as kube-apiserver does.
func (d *Documents) V3Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.Trim(strings.TrimPrefix(r.URL.Path, "/openapi/v3"), "/")
		if path == "" {
			serve(w, r, d.v3Index, false)
			return
		}
		doc, ok := d.v3[path]
		if !ok {
			respond.Error(w, r, meta.NewNotFoundPath())
			return
		}
		hash := r.URL.Query().Get("hash")
		if hash != "" && hash != doc.hash {
			w.Header().Set("Cache-Control", "no-cache")
			http.Redirect(w, r, serverRelativeURL(path, doc.hash), http.StatusMovedPermanently)
			return
		}
		serve(w, r, doc, hash != "")
	})
}

// serve writes doc: 304 when If-None-Match names it, gzipped when the
// client accepts gzip, and, for a hash-addressed document, with headers
// that let caches keep it for a year.
func serve(w http.ResponseWriter, r *http.Request, doc *encoded, immutable bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		respond.Error(w, r, meta.NewMethodNotSupported(meta.GroupResource{}, r.Method))
		return
	}
	h := w.Header()
	// The answer depends on Accept (406 or JSON) and Accept-Encoding.
	h.Set("Vary", "Accept, Accept-Encoding")
	if !acceptsJSON(r.Header.Get("Accept")) {
		respond.Error(w, r, meta.NewNotAcceptable([]string{"application/json"}))
		return
	}
	body, etag := doc.json, `"`+doc.hash+`"`
	gz := acceptsGzip(r.Header.Get("Accept-Encoding"))
	if gz {
		// A strong ETag names one representation: the gzipped bytes differ.
		body, etag = doc.gzip, `"`+doc.hash+`-gzip"`
	}
	h.Set("Etag", etag)
	if immutable {
		h.Set("Cache-Control", "public, immutable")
		h.Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	if noneMatch(r.Header.Get("If-None-Match"), doc.hash) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// noneMatch reports whether an If-None-Match header names the document in
// either of its representations (weak comparison, as RFC 9110 asks).
func noneMatch(header, hash string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" || tag == `"`+hash+`"` || tag == `"`+hash+`-gzip"` {
			return true
		}
	}
	return false
}

// acceptsJSON reports whether Accept allows application/json; no Accept
// allows anything.
func acceptsJSON(accept string) bool {
	if strings.TrimSpace(accept) == "" {
		return true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || zeroQ(params["q"]) {
			continue
		}
		switch mt {
		case "application/json", "application/*", "*/*":
			return true
		}
	}
	return false
}

// acceptsGzip reports whether Accept-Encoding allows gzip.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "x-gzip" && coding != "*" {
			continue
		}
		q := ""
		if k, v, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.TrimSpace(k) == "q" {
			q = strings.TrimSpace(v)
		}
		if !zeroQ(q) {
			return true
		}
	}
	return false
}

// zeroQ reports whether a quality value refuses the type ("0", "0.0").
func zeroQ(q string) bool {
	if q == "" {
		return false
	}
	f, err := strconv.ParseFloat(q, 64)
	return err == nil && f == 0
}
