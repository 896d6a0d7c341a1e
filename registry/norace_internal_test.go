//go:build !race

package registry

// raceEnabled: see race_internal_test.go.
const raceEnabled = false
