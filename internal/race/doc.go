// Package race says whether the binary was built with the race detector,
// for tests that count allocations: the detector's runtime allocates on
// its own at times, so allocation counts are not checked under it.
package race
