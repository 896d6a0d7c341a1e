package respond_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/apikit-dev/apikit/server/respond"
)

func TestAddWarning(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		want      []string
	}{
		{"plain", "spec.x: deprecated", []string{`299 - "spec.x: deprecated"`}},
		{"quotes and backslashes escaped", `say "a\b"`, []string{`299 - "say \"a\\b\""`}},
		// kube-apiserver writes UTF-8 as it is; strconv.Quote would too,
		// but escapes what it deems unprintable.
		{"utf-8 as is", "größe ✓ \u00ad", []string{"299 - \"größe ✓ \u00ad\""}},
		{"tab left out", "a\tb", nil},
		{"newline left out", "line one\nline two", nil},
		{"invalid utf-8 left out", "bad \xff", nil},
		{"empty left out", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			respond.AddWarning(h, tc.msg)
			if got := h.Values("Warning"); !slices.Equal(got, tc.want) {
				t.Fatalf("Warning headers %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWarningsOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []string
		want []string
	}{
		{"none", nil, nil},
		{"one", []string{"a"}, []string{`299 - "a"`}},
		{"repeated once", []string{"a", "b", "a", "b", "a"}, []string{`299 - "a"`, `299 - "b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			warn := respond.WarningsOnce(w)
			for _, m := range tc.msgs {
				warn(m)
			}
			if got := w.Header().Values("Warning"); !slices.Equal(got, tc.want) {
				t.Fatalf("Warning headers %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("concurrent", func(t *testing.T) {
		w := httptest.NewRecorder()
		warn := respond.WarningsOnce(w)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { warn("same") })
		}
		wg.Wait()
		if got := w.Header().Values("Warning"); len(got) != 1 {
			t.Fatalf("Warning headers %q, want one", got)
		}
	})
}
