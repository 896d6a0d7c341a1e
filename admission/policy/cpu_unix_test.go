//go:build unix

package policy

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used, user and system:
// what a loaded machine moves less than wall-clock time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
