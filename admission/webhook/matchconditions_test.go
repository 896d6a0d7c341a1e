package webhook

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// TestMatchConditionsBuildNoEnvironment: the evaluator builds its CEL
// environment at the first expression, not when made. Every server has the
// webhook plugins and few have matchConditions; the environment is ~0.2 MB
// of an idle server's heap. The environment is a process-wide once, which
// earlier tests build, so the check runs in a process of its own.
func TestMatchConditionsBuildNoEnvironment(t *testing.T) {
	const child = "APIKIT_TEST_MATCH_CONDITIONS_CHILD"
	if os.Getenv(child) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMatchConditionsBuildNoEnvironment$", "-test.count=1")
		cmd.Env = append(os.Environ(), child+"=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	allocated := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.TotalAlloc
	}
	before := allocated()
	mc, err := NewCELMatchConditions()
	if err != nil {
		t.Fatal(err)
	}
	made := allocated() - before
	// The environment allocates ~190 KB; making the evaluator a few hundred
	// bytes (the race detector's runtime adds some of its own).
	if made > 16<<10 {
		t.Errorf("NewCELMatchConditions allocated %d bytes: it built the CEL environment", made)
	}
	before = allocated()
	if _, err := mc.(*celConditions).program("true"); err != nil {
		t.Fatal(err)
	}
	if compiled := allocated() - before; compiled < 64<<10 {
		t.Errorf("the first expression allocated %d bytes: was the environment built before?", compiled)
	}
}
