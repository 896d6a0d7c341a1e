package encryption

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/meta"
)

// Set is a configuration's transformers, per resource. It can be replaced
// while servers run (Reload, Watch): a resource's Transformer reads the
// current configuration on every call.
type Set struct {
	path    string
	current atomic.Pointer[state]
}

type state struct {
	entries []entry
	hash    [32]byte
}

type entry struct {
	resources []string
	t         *providers
}

// New returns the Set of c.
func New(c *Configuration) (*Set, error) {
	st, err := newState(c)
	if err != nil {
		return nil, err
	}
	s := &Set{}
	s.current.Store(st)
	return s, nil
}

// Load reads the EncryptionConfiguration at path.
func Load(path string) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("error reading encryption provider configuration file %q: %w", path, err)
	}
	st, err := parseState(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Set{path: path}
	s.current.Store(st)
	return s, nil
}

func parseState(data []byte) (*state, error) {
	c, err := Parse(data)
	if err != nil {
		return nil, err
	}
	st, err := newState(c)
	if err != nil {
		return nil, err
	}
	st.hash = sha256.Sum256(data)
	return st, nil
}

func newState(c *Configuration) (*state, error) {
	st := &state{}
	for i, r := range c.Resources {
		p, err := newProviders(r.Providers)
		if err != nil {
			return nil, fmt.Errorf("resources[%d]: %w", i, err)
		}
		st.entries = append(st.entries, entry{resources: r.Resources, t: p})
	}
	return st, nil
}

// Reload reads the file again and, when it changed and is valid, makes it
// the configuration; it reports whether it did. An invalid file leaves the
// configuration as it was.
func (s *Set) Reload() (bool, error) {
	if s.path == "" {
		return false, nil
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return false, fmt.Errorf("reading encryption provider configuration file %q: %w", s.path, err)
	}
	if sum := sha256.Sum256(data); bytes.Equal(sum[:], s.current.Load().hash[:]) {
		return false, nil
	}
	st, err := parseState(data)
	if err != nil {
		return false, fmt.Errorf("%s: %w", s.path, err)
	}
	s.current.Store(st)
	return true, nil
}

// Watch reloads the file every interval until ctx ends, as
// --encryption-provider-config-automatic-reload does (kube-apiserver looks
// once a minute); failures are logged and the last good configuration kept.
func (s *Set) Watch(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := s.Reload()
		switch {
		case err != nil:
			log.Error("encryption provider configuration not reloaded", "err", err)
		case changed:
			log.Info("encryption provider configuration reloaded", "path", s.path)
		}
	}
}

// For returns the resource's Transformer: the providers of the first
// configuration entry naming it ("secrets", "deployments.apps", "*.apps",
// "*." for the core group, "*.*"), else identity.
func (s *Set) For(resource meta.GroupResource) Transformer {
	return &resourceTransformer{set: s, resource: resource}
}

type resourceTransformer struct {
	set      *Set
	resource meta.GroupResource
}

// identity is the transformer of a resource no entry names.
var identity = &providers{identity: true, identityFirst: true}

func (r *resourceTransformer) providers() *providers {
	for _, e := range r.set.current.Load().entries {
		for _, name := range e.resources {
			if matches(name, r.resource) {
				return e.t
			}
		}
	}
	return identity
}

func (r *resourceTransformer) ToStorage(key string, value []byte) ([]byte, error) {
	return r.providers().ToStorage(key, value)
}

func (r *resourceTransformer) FromStorage(key string, stored []byte) ([]byte, error) {
	return r.providers().FromStorage(key, stored)
}

// matches reports whether a configuration's resource name names gr.
func matches(name string, gr meta.GroupResource) bool {
	switch name {
	case "*.*":
		return true
	case "*.":
		return gr.Group == ""
	case "*." + gr.Group:
		return gr.Group != ""
	}
	if gr.Group == "" {
		return name == gr.Resource
	}
	return name == gr.Resource+"."+gr.Group
}
