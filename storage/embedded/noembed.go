//go:build apikit_noembed

package embedded

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/etcd3"
)

// Built is false in a binary built with -tags apikit_noembed: it links no
// etcd server, and Start fails with ErrNotBuilt.
const Built = false

// Etcd is a running embedded etcd; in a binary built without one there is
// never a value of it.
type Etcd struct{}

// Start fails with ErrNotBuilt: this binary was built without the embedded
// etcd.
func Start(ctx context.Context, cfg Config) (*Etcd, error) {
	return nil, ErrNotBuilt
}

// Client returns nil: there is no Etcd in this build.
func (e *Etcd) Client() *clientv3.Client { return nil }

// Storage returns nil: there is no Etcd in this build.
func (e *Etcd) Storage(opts ...etcd3.Option) storage.Interface { return nil }

// Close does nothing: there is no Etcd in this build.
func (e *Etcd) Close() error { return nil }
