package endpoints

import (
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

func TestOnceWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []string
		want []string
	}{
		{"none", nil, nil},
		{"one", []string{"a"}, []string{`299 - "a"`}},
		{"repeated once", []string{"a", "b", "a", "b", "a"}, []string{`299 - "a"`, `299 - "b"`}},
		{"quoted", []string{`say "x"`}, []string{`299 - "say \"x\""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			warn := onceWarnings(w)
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
		warn := onceWarnings(w)
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
