//go:build unix

package server_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used, user and system:
// on a loaded machine, a benchmark's CPU per op moves far less than its
// wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
