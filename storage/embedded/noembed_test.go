//go:build apikit_noembed

package embedded

import (
	"context"
	"errors"
	"testing"
)

// Run with: go test -tags apikit_noembed -run NoEmbed ./storage/embedded
func TestNoEmbedStartFails(t *testing.T) {
	if Built {
		t.Fatal("Built is true in a build with -tags apikit_noembed")
	}
	e, err := Start(context.Background(), Config{DataDir: t.TempDir()})
	if !errors.Is(err, ErrNotBuilt) || e != nil {
		t.Fatalf("Start = %v, %v; want nil, ErrNotBuilt", e, err)
	}
}
