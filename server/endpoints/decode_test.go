package endpoints_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
)

// unknownBody has an unknown field at every depth and shape the walker
// knows, next to known fields of the same shapes.
const unknownBody = `{
	"apiVersion": "test.example.com/v1", "kind": "Widget",
	"extra": 1,
	"metadata": {"name": "%s", "bogus": true, "labels": {"any-key": "fine"}},
	"spec": {
		"owner": "inline embedded fields are known",
		"Size": 5,
		"size": 2,
		"parts": [{"name": "p0"}, {"name": "p1", "colour": "red"}],
		"named": {"k": {"name": "n", "wat": 1}},
		"main": {"name": "m", "deep": {"x": 1}},
		"tags": ["a"],
		"blob": "aGk=",
		"free": {"anything": {"goes": [1, 2]}},
		"raw": {"opaque": true}
	},
	"status": {"ready": true, "why": "because"}
}`

var wantUnknown = []string{"extra", "metadata.bogus", "spec.Size", "spec.main.deep", "spec.named[k].wat", "spec.parts[1].colour", "status.why"}

func body(name string) string { return strings.Replace(unknownBody, "%s", name, 1) }

func TestFieldValidation(t *testing.T) {
	ts := newTestServer(t)

	t.Run("Strict", func(t *testing.T) {
		resp, b := ts.do(t, req{method: "POST", path: ns + "?fieldValidation=Strict", body: body("strict")})
		var msgs []string
		for _, u := range wantUnknown {
			msgs = append(msgs, "unknown field "+strconv.Quote(u))
		}
		wantStatus(t, resp, b, 400, meta.StatusReasonBadRequest, `Widget in version "v1" cannot be handled as a Widget: strict decoding error: `+strings.Join(msgs, ", "))
		if resp, _ := ts.do(t, req{method: "GET", path: ns + "/strict"}); resp.StatusCode != 404 {
			t.Error("a strictly refused object was stored")
		}
	})

	for _, level := range []string{"Warn", "", "Ignore"} {
		t.Run("level "+level, func(t *testing.T) {
			name := "level-" + strings.ToLower(level)
			if level == "" {
				name = "level-default"
			}
			resp, b := ts.do(t, req{method: "POST", path: ns + "?fieldValidation=" + level, body: body(name)})
			if resp.StatusCode != 201 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			var want []string
			if level != "Ignore" {
				for _, u := range wantUnknown {
					want = append(want, `299 - "unknown field \"`+u+`\""`)
				}
			}
			if got := resp.Header.Values("Warning"); !slices.Equal(got, want) {
				t.Errorf("warnings %q\nwant %q", got, want)
			}
			got := decode(t, b)
			// Unknown fields are dropped; field names are case-sensitive,
			// so "Size" does not set size.
			if path(got, "spec.size") != 2.0 || path(got, "spec.owner") != "inline embedded fields are known" ||
				path(got, "spec.free.anything.goes") == nil || path(got, "spec.raw.opaque") != true || path(got, "spec.blob") != "aGk=" {
				t.Errorf("stored %s", b)
			}
			if strings.Contains(string(b), "colour") || strings.Contains(string(b), "bogus") || strings.Contains(string(b), `"Size"`) {
				t.Errorf("unknown fields kept: %s", b)
			}
		})
	}

	// Field names are case-sensitive, as in Kubernetes: a field that
	// differs from a known one in case only is unknown, and dropped.
	for _, level := range []string{"Warn", "Ignore"} {
		resp, b := ts.do(t, req{method: "POST", path: ns + "?fieldValidation=" + level,
			body: `{"metadata":{"name":"case-` + strings.ToLower(level) + `","Labels":{"a":"b"}},"Spec":{"size":3},"spec":{"Size":5,"Owner":"x"}}`})
		if resp.StatusCode != 201 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		got := decode(t, b)
		if path(got, "spec.size") != nil || path(got, "spec.owner") != nil || path(got, "metadata.labels") != nil {
			t.Errorf("fieldValidation=%s: case-mismatched fields were applied: %s", level, b)
		}
	}

	// A field given twice: an error under Strict, a warning under Warn
	// (the last value is kept), nothing under Ignore; beside an unknown
	// field, both are reported.
	dup := `{"metadata":{"name":"dup-%s","name":"dup-%s","labels":{"a":"1","a":"2"}},"spec":{"size":1,"parts":[{"name":"x","name":"y"}],"size":4,"nope":1}}`
	wantDup := []string{`unknown field "spec.nope"`, `duplicate field "metadata.name"`, `duplicate field "metadata.labels.a"`,
		`duplicate field "spec.parts[0].name"`, `duplicate field "spec.size"`}
	resp, b := ts.do(t, req{method: "POST", path: ns + "?fieldValidation=Strict", body: strings.ReplaceAll(dup, "%s", "strict")})
	wantStatus(t, resp, b, 400, meta.StatusReasonBadRequest, `Widget in version "v1" cannot be handled as a Widget: strict decoding error: `+strings.Join(wantDup, ", "))
	for _, level := range []string{"Warn", "Ignore"} {
		l := strings.ToLower(level)
		resp, b := ts.do(t, req{method: "POST", path: ns + "?fieldValidation=" + level, body: strings.ReplaceAll(dup, "%s", l)})
		if resp.StatusCode != 201 {
			t.Fatalf("%s: %d %s", level, resp.StatusCode, b)
		}
		var want []string
		if level == "Warn" {
			for _, w := range wantDup {
				want = append(want, `299 - "`+strings.ReplaceAll(w, `"`, `\"`)+`"`)
			}
		}
		if got := resp.Header.Values("Warning"); !slices.Equal(got, want) {
			t.Errorf("%s: warnings %q\nwant %q", level, got, want)
		}
		if got := decode(t, b); path(got, "spec.size") != 4.0 || path(got, "metadata.labels.a") != "2" {
			t.Errorf("%s: the last values are not the ones kept: %s", level, b)
		}
	}

	resp, b = ts.do(t, req{method: "POST", path: ns + "?fieldValidation=Loose", body: body("x")})
	wantStatus(t, resp, b, 422, meta.StatusReasonInvalid, `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"`)

	// PUT and PATCH validate the same way.
	created := ts.create(t, "target", "")
	rv := path(created, "metadata.resourceVersion").(string)
	resp, b = ts.do(t, req{method: "PUT", path: ns + "/target?fieldValidation=Strict",
		body: `{"metadata":{"name":"target","resourceVersion":"` + rv + `"},"spec":{"sise":1}}`})
	wantStatus(t, resp, b, 400, meta.StatusReasonBadRequest, `Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.sise"`)
	resp, b = ts.do(t, req{method: "PATCH", path: ns + "/target?fieldValidation=Strict", body: `{"spec":{"sise":1}}`, contentType: "application/merge-patch+json"})
	wantStatus(t, resp, b, 400, meta.StatusReasonBadRequest, `Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.sise"`)
	resp, _ = ts.do(t, req{method: "PATCH", path: ns + "/target", body: `{"spec":{"sise":1}}`, contentType: "application/merge-patch+json"})
	if got := resp.Header.Values("Warning"); len(got) != 1 || got[0] != `299 - "unknown field \"spec.sise\""` {
		t.Errorf("patch warnings %q", got)
	}
}
