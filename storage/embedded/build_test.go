package embedded

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoEmbedBuildLinksNoEtcdServer holds what -tags apikit_noembed is for:
// a server built with it (examples/wardle here) links no etcd server, no
// raft and no bbolt, while the default build does.
func TestNoEmbedBuildLinksNoEtcdServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	serverOnly := []string{"go.etcd.io/etcd/server/v3/embed", "go.etcd.io/raft/v3", "go.etcd.io/bbolt"}
	for _, tc := range []struct {
		tags string
		want bool
	}{
		{tags: "", want: true},
		{tags: "apikit_noembed", want: false},
	} {
		t.Run("tags="+tc.tags, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-tags", tc.tags, "github.com/apikit-dev/apikit/examples/wardle").CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			deps := make(map[string]bool)
			for _, p := range strings.Fields(string(out)) {
				deps[p] = true
			}
			for _, p := range serverOnly {
				if deps[p] != tc.want {
					t.Errorf("wardle built with tags %q links %s: %v, want %v", tc.tags, p, deps[p], tc.want)
				}
			}
		})
	}
}
