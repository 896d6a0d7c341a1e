package registry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// failingStorage answers writes and lists with err.
type failingStorage struct {
	storage.Interface
	err error
}

func (f failingStorage) Create(context.Context, string, []byte) (int64, error) { return 0, f.err }

func (f failingStorage) List(context.Context, string, storage.ListOptions) (storage.ListResult, error) {
	return storage.ListResult{}, f.err
}

// TestStorageErrors checks the Status each storage failure gets: kube's
// code and words, and never the storage key or the error chain behind it.
func TestStorageErrors(t *testing.T) {
	const key = "/registry/example.com/widgets/ns/w"
	chain := fmt.Errorf("etcd3: create %q: %w", key, errors.New("etcdserver: request timed out"))
	for _, tc := range []struct {
		name    string
		err     error
		list    bool // the error answers a list, not a create
		code    int32
		reason  meta.StatusReason
		message string
	}{
		{
			name: "unavailable", err: storage.NewUnavailable(chain),
			code: 503, reason: meta.StatusReasonServiceUnavailable, message: "storage is unavailable",
		},
		{
			name: "over the store's object limit", err: storage.NewTooLarge(3000, 2048),
			code: 413, reason: meta.StatusReasonRequestEntityTooLarge, message: "Request entity too large: limit is 2048",
		},
		{
			name: "refused by etcd", err: &storage.Error{Code: storage.CodeTooLarge, Key: key, Err: chain, Message: "the object is larger than etcd accepts (its --max-request-bytes)"},
			code: 413, reason: meta.StatusReasonRequestEntityTooLarge, message: "Request entity too large: the object is larger than etcd accepts (its --max-request-bytes)",
		},
		{
			name: "a list at a compacted revision", list: true,
			err:  &storage.Error{Code: storage.CodeExpired, Key: key, Revision: 5, Message: "too old resource version: 5", Err: chain},
			code: 410, reason: meta.StatusReasonExpired, message: "The resourceVersion for the provided list is too old.",
		},
		{
			name: "a revision not reached", list: true,
			err:  &storage.Error{Code: storage.CodeTooLargeResourceVersion, Key: key, Revision: 99, Message: "Too large resource version: 99, current: 7"},
			code: 504, reason: meta.StatusReasonTimeout, message: "Timeout: Too large resource version: 99, current: 7",
		},
		{
			name: "not a storage error", err: chain,
			code: 500, reason: meta.StatusReasonInternalError, message: "Internal error occurred: the storage request failed",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.New()
			t.Cleanup(func() { mem.Close() })
			st, err := registry.NewStore(widgetOptions(failingStorage{Interface: mem, err: tc.err}))
			if err != nil {
				t.Fatal(err)
			}
			if tc.list {
				_, err = st.List(context.Background(), "ns", meta.ListOptions{ResourceVersion: "5", ResourceVersionMatch: "Exact"})
			} else {
				_, err = st.Create(context.Background(), "ns", widget("ns", "w", 1), registry.WriteOptions{})
			}
			s := wantStatus(t, err, tc.code, tc.reason, tc.message)
			for _, c := range causes(s) {
				if strings.Contains(c, "/registry") || strings.Contains(c, "etcdserver") {
					t.Errorf("a cause shows the storage key or error chain: %q", c)
				}
			}
		})
	}
}

func causes(s meta.Status) []string {
	if s.Details == nil {
		return nil
	}
	var out []string
	for _, c := range s.Details.Causes {
		out = append(out, c.Message)
	}
	return out
}

// TestObjectSizeLimit: the memory backend's limit reaches clients as
// kube-apiserver's 413, on create and update alike, and nothing is written.
func TestObjectSizeLimit(t *testing.T) {
	mem := memory.New(memory.WithMaxObjectBytes(1024))
	t.Cleanup(func() { mem.Close() })
	st, err := registry.NewStore(widgetOptions(mem))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	big := widget("ns", "big", 1)
	big.Spec.Color = strings.Repeat("x", 1024)
	_, err = st.Create(ctx, "ns", big, registry.WriteOptions{})
	wantStatus(t, err, 413, meta.StatusReasonRequestEntityTooLarge, "Request entity too large: limit is 1024")
	_, _, err = st.Get(ctx, "ns", "big", meta.GetOptions{})
	wantStatus(t, err, 404, meta.StatusReasonNotFound, `widgets.example.com "big" not found`)

	cur := mustCreate(t, st, widget("ns", "w", 1))
	_, _, err = st.Update(ctx, "ns", "w", edit(func(w *Widget) { w.Spec.Color = strings.Repeat("x", 1024) }), registry.UpdateOptions{})
	wantStatus(t, err, 413, meta.StatusReasonRequestEntityTooLarge, "Request entity too large: limit is 1024")
	if got, _, err := st.Get(ctx, "ns", "w", meta.GetOptions{}); err != nil || got.ResourceVersion != cur.ResourceVersion {
		t.Errorf("a refused update changed the object: %v %+v", err, got)
	}
}
