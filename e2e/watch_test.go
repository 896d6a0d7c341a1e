package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// flunderWatch is `kubectl get flunders -w --output-watch-events` in one
// namespace, as a user runs it, read line by line ("EVENT NAME REF").
type flunderWatch struct {
	t     *testing.T
	ctx   context.Context
	lines chan string
}

// watchFlunders starts the watch with the given kubeconfig and HOME (for
// kubectl's cache), waits a moment for it to be established, and stops it
// when the test ends.
func watchFlunders(t *testing.T, kubeconfig, home, ns string) *flunderWatch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cmd := exec.CommandContext(ctx, "kubectl", "get", "flunders", "-n", ns, "-w", "--output-watch-events",
		"-o", "custom-columns=EVENT:.type,NAME:.object.metadata.name,REF:.object.spec.flunderReference", "--no-headers")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+home)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- strings.Join(strings.Fields(sc.Text()), " ")
		}
		close(lines)
	}()
	time.Sleep(time.Second)
	return &flunderWatch{t: t, ctx: ctx, lines: lines}
}

// expect reads one line per want and compares.
func (w *flunderWatch) expect(want ...string) {
	w.t.Helper()
	for _, wl := range want {
		select {
		case got, ok := <-w.lines:
			if !ok {
				w.t.Fatalf("watch ended early, want %q", wl)
			}
			if got != wl {
				w.t.Errorf("watch line %q, want %q", got, wl)
			}
		case <-w.ctx.Done():
			w.t.Fatalf("no watch line, want %q", wl)
		}
	}
}
