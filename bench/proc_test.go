package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 250 and 50 ticks: 3 s.
	tail := " S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 12 0 100 2000000 500"
	for _, tc := range []struct {
		name string
		stat string
		want time.Duration
	}{
		{"plain", "1234 (wardle)" + tail, 3 * time.Second},
		{"name with spaces and parentheses", "1234 (a (b) c)" + tail, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tc.stat))
			if err != nil || got != tc.want {
				t.Fatalf("parseStatCPU = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "1234 wardle S 1", "1234 (wardle) S 1 2 3", "1234 (w)" + strings.Replace(tail, "250", "x", 1)} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q) succeeded", bad)
		}
	}
}

func TestParseVmRSS(t *testing.T) {
	status := "Name:\twardle\nVmPeak:\t  900 kB\nVmRSS:\t   35000 kB\nThreads:\t9\n"
	got, err := parseVmRSS([]byte(status))
	if err != nil || got != 35000*1024 {
		t.Fatalf("parseVmRSS = %v, %v; want %v", got, err, 35000*1024)
	}
	for _, bad := range []string{"Name:\tx\n", "VmRSS:\t12 MB\n", "VmRSS:\tx kB\n"} {
		if _, err := parseVmRSS([]byte(bad)); err == nil {
			t.Errorf("parseVmRSS(%q) succeeded", bad)
		}
	}
}

func TestOwnProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	pid := os.Getpid()
	if _, err := cpuTime(pid); err != nil {
		t.Errorf("cpuTime: %v", err)
	}
	if n, err := rss(pid); err != nil || n <= 0 {
		t.Errorf("rss = %d, %v", n, err)
	}
}

func TestProcessStop(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses /bin/sleep and signals")
	}
	p, err := startProcess("sleep", "/bin/sleep", []string{"60"}, filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Skip(err)
	}
	if p.done() {
		t.Fatal("done before stop")
	}
	if err := p.stop(5 * time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if !p.done() {
		t.Fatal("not done after stop")
	}
}
