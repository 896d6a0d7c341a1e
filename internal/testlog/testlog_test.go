package testlog_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/apikit-dev/apikit/internal/testlog"
)

// TestBufferConcurrentWrites: writers and a reader at once (go test
// -race finds an unguarded buffer), every write kept whole.
func TestBufferConcurrentWrites(t *testing.T) {
	var buf testlog.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&buf, "w%d-%d\n", i, j)
				_ = buf.String()
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "w") || strings.Count(l, "-") != 1 {
			t.Fatalf("torn line %q", l)
		}
	}
}

func TestCapture(t *testing.T) {
	prev := slog.Default()
	t.Run("captured", func(t *testing.T) {
		logs := testlog.Capture(t)
		slog.Debug("a debug line", "k", "v")
		if got := logs.String(); !strings.Contains(got, `level=DEBUG msg="a debug line" k=v`) {
			t.Errorf("captured %q", got)
		}
	})
	if slog.Default() != prev {
		t.Error("the default logger was not restored when the test ended")
	}
}
