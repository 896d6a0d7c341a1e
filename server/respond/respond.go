// Package respond writes API responses: JSON bodies and, for every failure,
// the Kubernetes Status object with the matching HTTP code, so that every
// part of the server answers errors the same way clients expect.
package respond

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/apikit-dev/apikit/meta"
)

// JSON writes v as JSON with the given status code.
func JSON(w http.ResponseWriter, code int, v any) {
	body, err := encode(v)
	if err != nil {
		Error(w, nil, err)
		return
	}
	Raw(w, code, "application/json", body)
}

// encode is v in JSON, HTML characters unescaped, as Kubernetes writes it.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, meta.NewInternalError(err)
	}
	return buf.Bytes(), nil
}

// Raw writes body with a content type and status code.
func Raw(w http.ResponseWriter, code int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// Error writes err as a Status. A StatusError is written as is; anything
// else is an internal error, logged (never the request body) for operators.
func Error(w http.ResponseWriter, r *http.Request, err error) {
	st := meta.StatusOf(err)
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	if st.Code >= 500 && st.Reason == meta.StatusReasonInternalError {
		attrs := []any{"err", err}
		if r != nil {
			attrs = append(attrs, "method", r.Method, "path", r.URL.Path)
		}
		slog.Error("internal error", attrs...)
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	Status(w, st)
}

// Status writes st with st.Code as the HTTP status.
func Status(w http.ResponseWriter, st meta.Status) {
	if st.Kind == "" {
		st.TypeMeta = meta.TypeMeta{Kind: "Status", APIVersion: "v1"}
	}
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	JSON(w, code, st)
}
