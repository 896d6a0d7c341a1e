//go:build !unix

package etcdtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

func setProcessGroup(*exec.Cmd) {}

func terminate(p *os.Process) error { return p.Kill() }

// lockFile takes an exclusive lock on path by creating it. A lock older
// than ten minutes is taken to be left by a process that died.
func lockFile(path string) (unlock func(), err error) {
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("creating the build lock: %w", err)
		}
		if fi, err := os.Stat(path); err == nil && time.Since(fi.ModTime()) > 10*time.Minute {
			os.Remove(path)
			continue
		}
		time.Sleep(200 * time.Millisecond)
	}
}
