package server_test

import (
	"testing"

	"github.com/apikit-dev/apikit/server"
)

func TestProfiling(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		s := newServer(t, "test", server.NewEmptyDelegate(), func(c *server.Config) { c.EnableProfiling = enabled })
		rec := get(t, s.Handler, "/debug/pprof/cmdline", "")
		if want := map[bool]int{true: 200, false: 404}[enabled]; rec.Code != want {
			t.Errorf("profiling %v: /debug/pprof/cmdline answered %d, want %d", enabled, rec.Code, want)
		}
	}
}
