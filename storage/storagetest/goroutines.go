package storagetest

import (
	"runtime"
	"strings"
)

// Goroutines counts the running goroutines whose stack (as runtime.Stack
// prints it: a header line, the frames, the "created by" line) match
// accepts. Leak and idle checks count a package's goroutines with it.
func Goroutines(match func(stack string) bool) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if match(g) {
			count++
		}
	}
	return count
}
