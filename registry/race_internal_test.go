//go:build race

package registry

// raceEnabled: the race detector's runtime allocates on its own at times,
// so allocation counts are not checked under it.
const raceEnabled = true
