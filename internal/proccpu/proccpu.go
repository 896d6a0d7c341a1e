// Package proccpu reads the CPU time the process has used, for benchmarks
// that report CPU per operation: on a loaded machine that figure moves far
// less than wall-clock time.
package proccpu
