package server_test

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apikit-dev/apikit/server"
)

// TestWatchAPIGroups: a dynamic group that comes and goes behind a server
// is told to the watchers of that server and of the server in front of it,
// whose APIGroups (and server.Resources) then have it, until stop; the
// chain's groups are synced once the dynamic ones were first told.
func TestWatchAPIGroups(t *testing.T) {
	inner := newServer(t, "inner", nil)
	outer := newServer(t, "outer", inner)
	if err := outer.InstallAPIGroup(widgetGroup(t, "static.example.com")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var dynamic []*server.APIGroupInfo
	inner.SetDynamicGroups(func() []*server.APIGroupInfo {
		mu.Lock()
		defer mu.Unlock()
		return dynamic
	})
	resources := func() []string {
		var out []string
		for _, r := range server.Resources(outer.APIGroups()) {
			i := r.Info()
			out = append(out, i.Resource+"."+i.GroupVersion.String())
		}
		return out
	}
	var outerCalls, innerCalls atomic.Int32
	var seen []string // what the outer watcher read when told
	stopOuter := outer.WatchAPIGroups(func() {
		outerCalls.Add(1)
		seen = resources()
	})
	stopInner := inner.WatchAPIGroups(func() { innerCalls.Add(1) })
	defer stopInner()

	if outer.APIGroupsSynced() {
		t.Error("synced before the dynamic groups were told")
	}
	static := []string{"widgets.static.example.com/v1", "gadgets.static.example.com/v1", "widgets.static.example.com/v1beta1"}
	if got := resources(); !slices.Equal(got, static) {
		t.Fatalf("before: %v, want %v", got, static)
	}
	mu.Lock()
	dynamic = []*server.APIGroupInfo{widgetGroup(t, "dynamic.example.com")}
	mu.Unlock()
	inner.DynamicGroupsChanged()
	want := append(slices.Clone(static), "widgets.dynamic.example.com/v1", "gadgets.dynamic.example.com/v1", "widgets.dynamic.example.com/v1beta1")
	if !outer.APIGroupsSynced() || !inner.APIGroupsSynced() {
		t.Error("not synced after the dynamic groups were told")
	}
	if outerCalls.Load() != 1 || innerCalls.Load() != 1 {
		t.Fatalf("calls outer %d inner %d, want 1 each", outerCalls.Load(), innerCalls.Load())
	}
	if !slices.Equal(seen, want) {
		t.Errorf("the outer watcher read %v, want %v", seen, want)
	}

	stopOuter()
	mu.Lock()
	dynamic = nil
	mu.Unlock()
	inner.DynamicGroupsChanged()
	if outerCalls.Load() != 1 || innerCalls.Load() != 2 {
		t.Errorf("after stop: calls outer %d inner %d, want 1 and 2", outerCalls.Load(), innerCalls.Load())
	}
	if got := resources(); !slices.Equal(got, static) {
		t.Errorf("after the group went: %v, want %v", got, static)
	}
}
