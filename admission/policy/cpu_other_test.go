//go:build !unix

package policy

import "time"

func processCPU() time.Duration { return 0 }
