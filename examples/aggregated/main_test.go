package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server/aggregator"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// TestRegisterWardle: wardle's APIServices appear once its CA exists, and
// follow it when it changes.
func TestRegisterWardle(t *testing.T) {
	mem := memory.New()
	defer mem.Close()
	store, err := aggregator.NewStore(storage.Shared(mem))
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); registerWardle(ctx, store, caFile, slog.New(slog.DiscardHandler)) }()
	defer func() { cancel(); <-done }()

	caBundles := func() (v1beta1, v1alpha1 []byte) {
		get := func(name string) []byte {
			s, _, err := store.Get(context.Background(), "", name, meta.GetOptions{})
			if err != nil {
				return nil
			}
			if errs := aggregator.ValidateAPIService(s); len(errs) > 0 {
				t.Errorf("%s: %v", name, errs)
			}
			return s.Spec.CABundle
		}
		return get("v1beta1.wardle.example.com"), get("v1alpha1.wardle.example.com")
	}
	time.Sleep(100 * time.Millisecond)
	if a, b := caBundles(); a != nil || b != nil {
		t.Fatal("registered before the CA exists")
	}
	for _, ca := range []string{"first CA", "second CA"} {
		if err := os.WriteFile(caFile, []byte(ca), 0o600); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			a, b := caBundles()
			if bytes.Equal(a, []byte(ca)) && bytes.Equal(b, []byte(ca)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the APIServices do not carry %q: %q %q", ca, a, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
