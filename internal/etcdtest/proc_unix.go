//go:build unix

package etcdtest

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup puts etcd in a process group of its own, so that a
// Ctrl-C sent to `go test` does not reach it before Cleanup stops it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminate asks etcd to shut down cleanly.
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// lockFile takes an exclusive lock on path, waiting for other processes
// that hold it; the lock goes away with the process if it dies.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the build lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
