//go:build !unix

package extensions

import "time"

// processCPU is unknown here: the benchmark reports 0.
func processCPU() time.Duration { return 0 }
