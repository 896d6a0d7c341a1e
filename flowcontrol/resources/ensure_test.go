package resources

import (
	"context"
	"testing"

	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
	"github.com/apikit-dev/apikit/storage/storagetest"
)

// TestEnsure checks kube-apiserver's rules for the default configuration
// against what is stored before Ensure runs, and that Ensure reads what is
// stored by listing, not with a read per default object.
func TestEnsure(t *testing.T) {
	suggestedPL := flowcontrol.SuggestedPriorityLevels()[0].Name
	mandatoryPL := flowcontrol.PriorityLevelCatchAll
	shares := func(api *API, name string) int32 {
		t.Helper()
		pl, _, err := api.PriorityLevels.Get(context.Background(), "", name, meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *pl.Spec.Limited.NominalConcurrencyShares
	}
	// changed stores the default level name with other shares and the
	// given autoupdate annotation ("" for none), as a user's edit would.
	changed := func(name, autoupdate string) func(t *testing.T, api *API) {
		return func(t *testing.T, api *API) {
			_, _, err := api.PriorityLevels.Update(context.Background(), "", name, func(_ context.Context, pl *priorityLevel) (*priorityLevel, error) {
				pl.Spec.Limited.NominalConcurrencyShares = int32Ptr(7)
				pl.Annotations = map[string]string{}
				if autoupdate != "" {
					pl.Annotations[flowcontrol.AutoUpdateAnnotation] = autoupdate
				}
				return pl, nil
			}, registry.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	stale := func(autoupdate string) func(t *testing.T, api *API) {
		return func(t *testing.T, api *API) {
			pl := &priorityLevel{
				ObjectMeta: meta.ObjectMeta{Name: "old", Annotations: map[string]string{flowcontrol.AutoUpdateAnnotation: autoupdate}},
				Spec: flowcontrol.PriorityLevelConfigurationSpec{Type: flowcontrol.PriorityLevelEnablementLimited,
					Limited: &flowcontrol.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: int32Ptr(3),
						LimitResponse: flowcontrol.LimitResponse{Type: flowcontrol.LimitResponseTypeReject}}},
			}
			if _, err := api.PriorityLevels.Create(context.Background(), "", pl, registry.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	exists := func(api *API, name string) bool {
		_, _, err := api.PriorityLevels.Get(context.Background(), "", name, meta.GetOptions{})
		return err == nil
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, api *API)
		check func(t *testing.T, api *API)
	}{
		{"fresh store: every default is created", nil, func(t *testing.T, api *API) {
			for _, pl := range append(flowcontrol.MandatoryPriorityLevels(), flowcontrol.SuggestedPriorityLevels()...) {
				if !exists(api, pl.Name) {
					t.Errorf("priority level %s missing", pl.Name)
				}
			}
			for _, fs := range append(flowcontrol.MandatoryFlowSchemas(), flowcontrol.SuggestedFlowSchemas()...) {
				if _, _, err := api.FlowSchemas.Get(context.Background(), "", fs.Name, meta.GetOptions{}); err != nil {
					t.Errorf("flow schema %s: %v", fs.Name, err)
				}
			}
		}},
		{"suggested, autoupdate true: spec restored", changed(suggestedPL, "true"), func(t *testing.T, api *API) {
			if got := shares(api, suggestedPL); got == 7 {
				t.Errorf("shares of %s left at 7", suggestedPL)
			}
		}},
		{"suggested, autoupdate false: left alone", changed(suggestedPL, "false"), func(t *testing.T, api *API) {
			if got := shares(api, suggestedPL); got != 7 {
				t.Errorf("shares of %s = %d, want the user's 7", suggestedPL, got)
			}
		}},
		{"mandatory, autoupdate false: spec restored", changed(mandatoryPL, "false"), func(t *testing.T, api *API) {
			if got := shares(api, mandatoryPL); got == 7 {
				t.Errorf("shares of %s left at 7", mandatoryPL)
			}
		}},
		{"stale, autoupdate true: deleted", stale("true"), func(t *testing.T, api *API) {
			if exists(api, "old") {
				t.Error("stale level kept")
			}
		}},
		{"stale, autoupdate false: kept", stale("false"), func(t *testing.T, api *API) {
			if !exists(api, "old") {
				t.Error("user's level deleted")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := memory.New()
			defer mem.Close()
			cs := &storagetest.CountingReads{Interface: mem}
			api, err := New(storage.Shared(cs))
			if err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				if err := api.Ensure(ctx); err != nil {
					t.Fatal(err)
				}
				tc.setup(t, api)
			}
			cs.Reset()
			if err := api.Ensure(ctx); err != nil {
				t.Fatal(err)
			}
			// Updates read the object they write; nothing else reads one.
			if got, limit := cs.Reads(), int64(2); got > limit {
				t.Errorf("Ensure read %d objects one by one, want at most %d", got, limit)
			}
			tc.check(t, api)
		})
	}
}
