package admission_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/meta"
)

// mutator appends its name to the object's labels["steps"] and records the
// label as VersionedObject shows it.
type mutator struct {
	name string
	seen *[]string
	fail bool
}

func (m mutator) Handles(op admission.Operation) bool { return op == admission.Create }

func (m mutator) Admit(_ context.Context, a *admission.Attributes) error {
	*m.seen = append(*m.seen, m.name+" sees "+a.VersionedObject.GetObjectMeta().Labels["steps"])
	if m.fail {
		return errors.New("no")
	}
	l := a.Object.GetObjectMeta().Labels
	l["steps"] += m.name
	return nil
}

func (m mutator) Validate(_ context.Context, a *admission.Attributes) error {
	*m.seen = append(*m.seen, m.name+" validates "+a.VersionedObject.GetObjectMeta().Labels["steps"])
	return nil
}

func TestChainVersionedObjects(t *testing.T) {
	conversions := 0
	// toV2 copies the object, as a conversion to another version does.
	toV2 := func(o meta.Object) (meta.Object, error) {
		conversions++
		c := &meta.PartialObjectMetadata{ObjectMeta: *o.GetObjectMeta()}
		c.Labels = map[string]string{"steps": o.GetObjectMeta().Labels["steps"]}
		c.Labels["version"] = "v2"
		return c, nil
	}
	for _, tc := range []struct {
		name            string
		toVersion       func(meta.Object) (meta.Object, error)
		plugins         func(seen *[]string) admission.Chain
		want            []string
		wantConversions int
		wantErr         bool
	}{{
		name:      "each mutator sees the ones before it in the requested version",
		toVersion: toV2,
		plugins: func(seen *[]string) admission.Chain {
			return admission.Chain{mutator{name: "a", seen: seen}, mutator{name: "b", seen: seen}}
		},
		want:            []string{"a sees ", "b sees a", "a validates ab", "b validates ab"},
		wantConversions: 3, // before each mutator, once for the validators
	}, {
		name: "one version: the versioned object is the object",
		plugins: func(seen *[]string) admission.Chain {
			return admission.Chain{mutator{name: "a", seen: seen}}
		},
		want: []string{"a sees ", "a validates a"},
	}, {
		name:      "a refusal is Forbidden",
		toVersion: toV2,
		plugins: func(seen *[]string) admission.Chain {
			return admission.Chain{mutator{name: "a", seen: seen, fail: true}, mutator{name: "b", seen: seen}}
		},
		want:            []string{"a sees "},
		wantConversions: 1,
		wantErr:         true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			conversions = 0
			var seen []string
			obj := &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{Name: "x", Labels: map[string]string{}}}
			a := &admission.Attributes{Operation: admission.Create, Name: "x", Object: obj, ToVersion: tc.toVersion}
			c := tc.plugins(&seen)
			err := c.Admit(context.Background(), a)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Admit: %v", err)
			}
			if err != nil {
				if !meta.IsForbidden(err) {
					t.Errorf("refusal %v is not Forbidden", err)
				}
			} else if err := c.Validate(context.Background(), a); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !slices.Equal(seen, tc.want) {
				t.Errorf("plugins saw %q, want %q", seen, tc.want)
			}
			if conversions != tc.wantConversions {
				t.Errorf("%d conversions, want %s", conversions, strconv.Itoa(tc.wantConversions))
			}
			if tc.toVersion == nil && a.VersionedObject != meta.Object(obj) {
				t.Error("without a conversion VersionedObject is not Object")
			}
		})
	}
}
