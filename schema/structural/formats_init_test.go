package structural

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestInitCompilesNoFormat: the package's init allocates little (the
// format expressions are compiled at first use; compiled at init they
// allocated ~0.5 MB in every server that links the package, CRDs or not),
// and every format's expression still compiles.
func TestInitCompilesNoFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	// The test binary run again, running no test, reports each package's
	// init with GODEBUG=inittrace=1.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	m := regexp.MustCompile(`init github.com/apikit-dev/apikit/schema/structural @[^,]*, [^,]*, (\d+) bytes`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no init of the package in:\n%s", out)
	}
	bytes, _ := strconv.Atoi(string(m[1]))
	t.Logf("the package's init allocates %d bytes", bytes)
	if bytes > 64<<10 {
		t.Errorf("the package's init allocates %d bytes, want at most 64 KiB", bytes)
	}
	for _, valid := range formats {
		valid("x") // compiles the format's expression, panicking on a bad one
	}
	for _, re := range []func() *regexp.Regexp{rxSSN, rxHostname, rxDateTime, rxDuration, rxCard, rxShortName, rxLongName, rxSpaceDash} {
		re()
	}
}
