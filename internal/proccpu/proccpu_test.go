//go:build unix

package proccpu

import (
	"testing"
	"time"
)

func TestUsedGrowsWithWork(t *testing.T) {
	start := Used()
	if start <= 0 {
		t.Fatalf("Used() = %v at the start; want the CPU the process has used", start)
	}
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for Used() == start && time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x ^= i
		}
	}
	if got := Used(); got <= start {
		t.Fatalf("Used() = %v after spinning (%d), %v before; want more", got, x, start)
	}
}
