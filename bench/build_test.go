package main

import (
	"testing"
)

func TestCountModules(t *testing.T) {
	out := "/tmp/wardle: go1.26.8\n" +
		"\tpath\tgithub.com/apikit-dev/apikit/examples/wardle\n" +
		"\tmod\tgithub.com/apikit-dev/apikit\t(devel)\t\n" +
		"\tdep\tgithub.com/spf13/pflag\tv1.1.0\th1:abc=\n" +
		"\tdep\tgithub.com/x/y\tv1.0.0\n" +
		"\t=>\t../y\t(devel)\t\n" +
		"\tbuild\t-ldflags=\"-s -w\"\n" +
		"\tbuild\tGOOS=linux\n"
	if got := countModules([]byte(out)); got != 2 {
		t.Fatalf("countModules = %d, want 2", got)
	}
}
