package resources

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func int32Ptr(v int32) *int32 { return &v }

func TestConfigurationIsAppliedLive(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mem := memory.New()
	defer mem.Close()
	api, err := New(storage.Shared(mem))
	if err != nil {
		t.Fatal(err)
	}
	apf, err := flowcontrol.NewAPF(flowcontrol.APFConfig{ServerConcurrencyLimit: 600})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); api.Run(ctx, apf, nil) }()
	defer func() { cancel(); <-done }()

	info := &request.Info{IsResourceRequest: true, Verb: "list", APIGroup: "wardle.example.com", Resource: "flunders", Namespace: "ns"}
	alice := &authn.User{Name: "alice", Groups: []string{authn.AllAuthenticated}}
	level := func() string { _, pl := apf.Classify(alice, info); return pl }
	if got := level(); got != "global-default" {
		t.Fatalf("alice starts at %s", got)
	}

	// A schema for alice whose level does not exist yet: dangling.
	_, err = api.FlowSchemas.Create(ctx, "", &flowcontrol.FlowSchema{
		ObjectMeta: meta.ObjectMeta{Name: "alice"},
		Spec: flowcontrol.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrol.PriorityLevelConfigurationReference{Name: "tenants"},
			MatchingPrecedence:         500,
			DistinguisherMethod:        &flowcontrol.FlowDistinguisherMethod{Type: flowcontrol.FlowDistinguisherMethodByUser},
			Rules: []flowcontrol.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrol.Subject{{Kind: flowcontrol.SubjectKindUser, User: &flowcontrol.UserSubject{Name: "alice"}}},
				ResourceRules: []flowcontrol.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}}},
			}},
		},
	}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dangling := func(want flowcontrol.ConditionStatus) func() bool {
		return func() bool {
			fs, _, err := api.FlowSchemas.Get(ctx, "", "alice", meta.GetOptions{})
			if err != nil {
				return false
			}
			for _, c := range fs.Status.Conditions {
				if c.Type == flowcontrol.FlowSchemaConditionDangling {
					return c.Status == want
				}
			}
			return false
		}
	}
	eventually(t, "the schema to be marked dangling", dangling(flowcontrol.ConditionTrue))
	if got := level(); got != "global-default" {
		t.Fatalf("a dangling schema classified alice into %s", got)
	}

	// The level appears: alice moves there at once, the condition clears.
	_, err = api.PriorityLevels.Create(ctx, "", &flowcontrol.PriorityLevelConfiguration{
		ObjectMeta: meta.ObjectMeta{Name: "tenants"},
		Spec: flowcontrol.PriorityLevelConfigurationSpec{Type: flowcontrol.PriorityLevelEnablementLimited,
			Limited: &flowcontrol.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: int32Ptr(10),
				LimitResponse: flowcontrol.LimitResponse{Type: flowcontrol.LimitResponseTypeReject}}},
	}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice to move to the new level", func() bool { return level() == "tenants" })
	eventually(t, "the Dangling condition to clear", dangling(flowcontrol.ConditionFalse))

	// Deleting a mandatory object restores it.
	if _, _, err := api.PriorityLevels.Delete(ctx, "", flowcontrol.PriorityLevelCatchAll, registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "catch-all to be restored", func() bool {
		_, _, err := api.PriorityLevels.Get(ctx, "", flowcontrol.PriorityLevelCatchAll, meta.GetOptions{})
		return err == nil
	})

	// A suggested object an operator changed and marked is left alone;
	// one it did not mark is set back.
	for _, tc := range []struct {
		name, annotation string
		want             int32
	}{{"workload-low", "false", 7}, {"workload-high", "true", 40}} {
		_, _, err := api.PriorityLevels.Update(ctx, "", tc.name, func(_ context.Context, pl *flowcontrol.PriorityLevelConfiguration) (*flowcontrol.PriorityLevelConfiguration, error) {
			pl.Spec.Limited.NominalConcurrencyShares = int32Ptr(7)
			pl.Annotations[flowcontrol.AutoUpdateAnnotation] = tc.annotation
			return pl, nil
		}, registry.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := api.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want int32
	}{{"workload-low", 7}, {"workload-high", 40}} {
		pl, _, err := api.PriorityLevels.Get(ctx, "", tc.name, meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := *pl.Spec.Limited.NominalConcurrencyShares; got != tc.want {
			t.Errorf("%s has %d shares after Ensure, want %d", tc.name, got, tc.want)
		}
	}

	// Counting feeds list estimates.
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		TrackObjectCounts(ctx, apf, api.Resources, time.Hour, nil)
	}()
	eventually(t, "flow schemas to be counted", func() bool {
		_, pl := apf.Classify(alice, info)
		return pl == "tenants" && countOf(apf) == 14 // 13 defaults and alice
	})
	cancel()
	<-counted
}

// countOf is the recorded count of flow schemas.
func countOf(apf *flowcontrol.APF) int64 {
	n, _ := apf.ObjectCount(FlowSchemas)
	return n
}

// TestNamesAreDNSSubdomains: kube-apiserver 1.37 names FlowSchemas and
// PriorityLevelConfigurations, and a schema's priority level, with
// NameIsDNSSubdomain, not with the looser path-segment rule of RBAC names.
func TestNamesAreDNSSubdomains(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	defer mem.Close()
	api, err := New(storage.Shared(mem))
	if err != nil {
		t.Fatal(err)
	}
	const subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
	schema := func(name, level string) *flowcontrol.FlowSchema {
		return &flowcontrol.FlowSchema{
			ObjectMeta: meta.ObjectMeta{Name: name},
			Spec: flowcontrol.FlowSchemaSpec{
				PriorityLevelConfiguration: flowcontrol.PriorityLevelConfigurationReference{Name: level},
				MatchingPrecedence:         500,
				Rules: []flowcontrol.PolicyRulesWithSubjects{{
					Subjects:      []flowcontrol.Subject{{Kind: flowcontrol.SubjectKindUser, User: &flowcontrol.UserSubject{Name: "alice"}}},
					ResourceRules: []flowcontrol.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}}},
				}},
			},
		}
	}
	level := func(name string) *flowcontrol.PriorityLevelConfiguration {
		return &flowcontrol.PriorityLevelConfiguration{
			ObjectMeta: meta.ObjectMeta{Name: name},
			Spec: flowcontrol.PriorityLevelConfigurationSpec{Type: flowcontrol.PriorityLevelEnablementLimited,
				Limited: &flowcontrol.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: int32Ptr(10),
					LimitResponse: flowcontrol.LimitResponse{Type: flowcontrol.LimitResponseTypeReject}}},
		}
	}
	for _, tc := range []struct {
		name   string
		create func() error
		want   string // the Status message; "" when the create succeeds
	}{
		{"schema ok", func() error {
			_, err := api.FlowSchemas.Create(ctx, "", schema("tenants.example.com", "tenants"), registry.WriteOptions{})
			return err
		}, ""},
		{"schema with a colon", func() error {
			_, err := api.FlowSchemas.Create(ctx, "", schema("system:alice", "tenants"), registry.WriteOptions{})
			return err
		}, `FlowSchema.flowcontrol.apiserver.k8s.io "system:alice" is invalid: metadata.name: Invalid value: "system:alice": ` + subdomain},
		{"schema's level upper case", func() error {
			_, err := api.FlowSchemas.Create(ctx, "", schema("alice", "Tenants"), registry.WriteOptions{})
			return err
		}, `FlowSchema.flowcontrol.apiserver.k8s.io "alice" is invalid: spec.priorityLevelConfiguration.name: Invalid value: "Tenants": ` + subdomain},
		{"level with a slash", func() error {
			_, err := api.PriorityLevels.Create(ctx, "", level("a/b"), registry.WriteOptions{})
			return err
		}, `PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io "a/b" is invalid: metadata.name: Invalid value: "a/b": ` + subdomain},
		{"level upper case", func() error {
			_, err := api.PriorityLevels.Create(ctx, "", level("Tenants"), registry.WriteOptions{})
			return err
		}, `PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io "Tenants" is invalid: metadata.name: Invalid value: "Tenants": ` + subdomain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.create()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				return
			}
			var se *meta.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("create: %v, want a StatusError", err)
			}
			if se.ErrStatus.Code != 422 || se.ErrStatus.Reason != meta.StatusReasonInvalid || se.ErrStatus.Message != tc.want {
				t.Errorf("create: %d %s %q\nwant 422 Invalid %q", se.ErrStatus.Code, se.ErrStatus.Reason, se.ErrStatus.Message, tc.want)
			}
		})
	}
}
