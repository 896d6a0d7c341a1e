package leases_test

import (
	"context"
	"testing"

	"github.com/apikit-dev/apikit/core/leases"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

func TestValidation(t *testing.T) {
	i32 := func(n int32) *int32 { return &n }
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		spec leases.LeaseSpec
		want string
	}{
		{"ok", leases.LeaseSpec{HolderIdentity: str("a"), LeaseDurationSeconds: i32(15), LeaseTransitions: i32(0)}, ""},
		{"zero duration", leases.LeaseSpec{LeaseDurationSeconds: i32(0)},
			`Lease.coordination.k8s.io "l" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0`},
		{"negative transitions", leases.LeaseSpec{LeaseTransitions: i32(-1)},
			`Lease.coordination.k8s.io "l" is invalid: spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0`},
		{"preferred holder without strategy", leases.LeaseSpec{PreferredHolder: str("b")},
			"Lease.coordination.k8s.io \"l\" is invalid: spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.New()
			t.Cleanup(func() { _ = mem.Close() })
			st, err := leases.New(storage.Shared(mem))
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Create(context.Background(), "ns", &leases.Lease{ObjectMeta: meta.ObjectMeta{Name: "l"}, Spec: tt.spec}, registry.WriteOptions{})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("create: %v", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("create: %v\nwant %s", err, tt.want)
			}
		})
	}
}
