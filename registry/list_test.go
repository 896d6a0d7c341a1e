package registry_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

func names(res *registry.ListResult[*Widget]) []string {
	out := make([]string, len(res.Items))
	for i, e := range res.Items {
		out[i] = e.Object.Namespace + "/" + e.Object.Name
	}
	return out
}

func seedSelectable(t *testing.T, st *registry.Store[*Widget]) {
	t.Helper()
	for _, w := range []struct {
		ns, name, color string
		labels          map[string]string
	}{
		{"a", "w1", "red", map[string]string{"tier": "front", "env": "prod"}},
		{"a", "w2", "blue", map[string]string{"tier": "back", "env": "dev"}},
		{"a", "w3", "green", nil},
		{"b", "w1", "red", map[string]string{"tier": "front", "env": "dev"}},
		{"b", "w4", "blue", map[string]string{"tier": "db"}},
	} {
		obj := widget(w.ns, w.name, 1)
		obj.Spec.Color = w.color
		obj.Labels = w.labels
		mustCreate(t, st, obj)
	}
}

func TestListSelectors(t *testing.T) {
	st, _ := newWidgets(t)
	seedSelectable(t, st)
	for _, tc := range []struct {
		name         string
		ns           string
		label, field string
		want         []string
		code         int32
		errorMessage string
	}{
		{name: "everything", want: []string{"a/w1", "a/w2", "a/w3", "b/w1", "b/w4"}},
		{name: "one namespace", ns: "a", want: []string{"a/w1", "a/w2", "a/w3"}},
		{name: "label equality", label: "tier=front", want: []string{"a/w1", "b/w1"}},
		{name: "label set and inequality", label: "tier in (front,back),env!=prod", want: []string{"a/w2", "b/w1"}},
		{name: "label exists", ns: "b", label: "env", want: []string{"b/w1"}},
		{name: "label does not exist", label: "!tier", want: []string{"a/w3"}},
		{name: "metadata.name", field: "metadata.name=w1", want: []string{"a/w1", "b/w1"}},
		{name: "metadata.namespace", field: "metadata.namespace=b", want: []string{"b/w1", "b/w4"}},
		{name: "custom field", field: "spec.color=red", want: []string{"a/w1", "b/w1"}},
		{name: "custom field negated in a namespace", ns: "a", field: "spec.color!=red", want: []string{"a/w2", "a/w3"}},
		{name: "labels and fields", label: "tier=front", field: "metadata.namespace=a", want: []string{"a/w1"}},
		{name: "nothing matches", field: "metadata.name=none", want: []string{}},
		{name: "unsupported field", field: "spec.size=1", code: 400, errorMessage: "field label not supported: spec.size"},
		{name: "unsupported negated field", field: "status.ready!=x", code: 400, errorMessage: "field label not supported: status.ready"},
		{name: "bad field selector", field: "nonsense", code: 400, errorMessage: "invalid selector: 'nonsense'; can't understand 'nonsense'"},
		{name: "bad label selector", label: "a in", code: 400, errorMessage: "unable to parse requirement: found '' expected: '('"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := st.List(context.Background(), tc.ns, meta.ListOptions{LabelSelector: tc.label, FieldSelector: tc.field})
			if tc.code != 0 {
				wantStatus(t, err, tc.code, meta.StatusReasonBadRequest, tc.errorMessage)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(res); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// Stores without custom fields select on metadata only.
func TestListFieldSelectorWithoutCustomFields(t *testing.T) {
	st, _ := newWidgets(t, func(o *registry.Options[*Widget]) { o.Fields = nil })
	seedSelectable(t, st)
	res, err := st.List(context.Background(), "", meta.ListOptions{FieldSelector: "metadata.name=w1,metadata.namespace=b"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res); !slices.Equal(got, []string{"b/w1"}) {
		t.Errorf("got %v", got)
	}
	// In the words of kube-apiserver's default field label conversion.
	_, err = st.List(context.Background(), "", meta.ListOptions{FieldSelector: "spec.color=red"})
	wantStatus(t, err, 400, meta.StatusReasonBadRequest, `"spec.color" is not a known field selector: only "metadata.name", "metadata.namespace"`)
}

func TestListPaging(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	for i := range 7 {
		mustCreate(t, st, widget("ns", "w"+strconv.Itoa(i), i))
	}
	var all []string
	var rv string
	opts := meta.ListOptions{Limit: 3}
	for page := 0; ; page++ {
		res, err := st.List(ctx, "ns", opts)
		if err != nil {
			t.Fatal(err)
		}
		if page == 0 {
			rv = res.ResourceVersion
			if res.RemainingItemCount == nil || *res.RemainingItemCount != 4 {
				t.Errorf("remainingItemCount = %v, want 4", res.RemainingItemCount)
			}
			// A write between pages is not seen: pages share a revision.
			mustCreate(t, st, widget("ns", "z-late", 1))
		} else if res.ResourceVersion != rv {
			t.Errorf("page %d at resourceVersion %s, want %s", page, res.ResourceVersion, rv)
		}
		if len(res.Items) > 3 {
			t.Errorf("page %d has %d items, limit 3", page, len(res.Items))
		}
		all = append(all, names(res)...)
		if res.Continue == "" {
			break
		}
		opts.Continue = res.Continue
	}
	want := []string{"ns/w0", "ns/w1", "ns/w2", "ns/w3", "ns/w4", "ns/w5", "ns/w6"}
	if !slices.Equal(all, want) {
		t.Errorf("pages gave %v, want %v", all, want)
	}

	// A limit counts matching items only.
	res, err := st.List(ctx, "ns", meta.ListOptions{Limit: 2, FieldSelector: "metadata.name!=w0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res); !slices.Equal(got, []string{"ns/w1", "ns/w2"}) || res.Continue == "" {
		t.Errorf("filtered page %v continue %q", got, res.Continue)
	}
}

func TestListResourceVersion(t *testing.T) {
	st, mem := newWidgets(t)
	ctx := context.Background()
	first := mustCreate(t, st, widget("ns", "a", 1))
	mustCreate(t, st, widget("ns", "b", 1))
	latest, _ := mem.CurrentRevision(ctx)
	cur := strconv.FormatInt(latest, 10)

	for _, tc := range []struct {
		name  string
		opts  meta.ListOptions
		want  []string
		rv    string
		code  int32
		msg   string
		cause string
	}{
		{name: "unset: latest", opts: meta.ListOptions{}, want: []string{"ns/a", "ns/b"}, rv: cur},
		{name: "0: any", opts: meta.ListOptions{ResourceVersion: "0"}, want: []string{"ns/a", "ns/b"}},
		{name: "not older than the first", opts: meta.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: meta.ResourceVersionMatchNotOlderThan}, want: []string{"ns/a", "ns/b"}, rv: cur},
		{name: "exact at the first", opts: meta.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: meta.ResourceVersionMatchExact}, want: []string{"ns/a"}, rv: first.ResourceVersion},
		{name: "legacy with a limit is exact", opts: meta.ListOptions{ResourceVersion: first.ResourceVersion, Limit: 10}, want: []string{"ns/a"}, rv: first.ResourceVersion},
		{name: "legacy without a limit is not older than", opts: meta.ListOptions{ResourceVersion: first.ResourceVersion}, want: []string{"ns/a", "ns/b"}, rv: cur},
		{name: "not a number", opts: meta.ListOptions{ResourceVersion: "abc"}, code: 400, msg: `invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`},
		{name: "with continue", opts: meta.ListOptions{ResourceVersion: cur, Continue: "x"}, code: 400, msg: "specifying resource version is not allowed when using continue"},
		{name: "from the future", opts: meta.ListOptions{ResourceVersion: strconv.FormatInt(latest+100, 10)}, code: 504,
			msg: "Timeout: Too large resource version: " + strconv.FormatInt(latest+100, 10) + ", current: " + cur, cause: "ResourceVersionTooLarge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := st.List(ctx, "ns", tc.opts)
			if tc.code != 0 {
				reason := meta.StatusReasonBadRequest
				if tc.code == 504 {
					reason = meta.StatusReasonTimeout
				}
				s := wantStatus(t, err, tc.code, reason, tc.msg)
				if tc.cause != "" && (s.Details == nil || len(s.Details.Causes) != 1 || s.Details.Causes[0].Type != tc.cause) {
					t.Errorf("details %+v, want cause %s", s.Details, tc.cause)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(res); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if tc.rv != "" && res.ResourceVersion != tc.rv {
				t.Errorf("list resourceVersion %s, want %s", res.ResourceVersion, tc.rv)
			}
			for _, e := range res.Items {
				if e.Object.ResourceVersion == "" {
					t.Errorf("%s has no resourceVersion", e.Object.Name)
				}
			}
		})
	}
}

func TestListExpired(t *testing.T) {
	st, mem := newWidgets(t)
	ctx := context.Background()
	first := mustCreate(t, st, widget("ns", "a", 1))
	mustCreate(t, st, widget("ns", "b", 1))
	res, err := st.List(ctx, "ns", meta.ListOptions{Limit: 1})
	if err != nil || res.Continue == "" {
		t.Fatalf("first page: %v %+v", err, res)
	}
	mustCreate(t, st, widget("ns", "c", 1))
	latest, _ := mem.CurrentRevision(ctx)
	if err := mem.Compact(latest); err != nil {
		t.Fatal(err)
	}
	_, err = st.List(ctx, "ns", meta.ListOptions{Limit: 1, Continue: res.Continue})
	wantStatus(t, err, 410, meta.StatusReasonExpired, "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
	// The Status carries kube-apiserver's "inconsistent continue" token,
	// which lists the rest at the latest revision.
	token := meta.StatusOf(err).Continue
	if token == "" {
		t.Fatal("the 410 of an expired continue token carries no metadata.continue")
	}
	rest, err := st.List(ctx, "ns", meta.ListOptions{Continue: token})
	if err != nil {
		t.Fatalf("list with the inconsistent continue token: %v", err)
	}
	if len(rest.Items) != 2 || rest.Items[0].Object.Name != "b" || rest.Items[1].Object.Name != "c" || rest.ResourceVersion != strconv.FormatInt(latest, 10) {
		t.Errorf("list with the inconsistent continue token: %d items at %s, want b and c at %d", len(rest.Items), rest.ResourceVersion, latest)
	}
	_, err = st.List(ctx, "ns", meta.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: meta.ResourceVersionMatchExact})
	if !meta.IsResourceExpired(err) {
		t.Errorf("exact list at a compacted revision: %v, want 410 Expired", err)
	}
}

func TestGetResourceVersion(t *testing.T) {
	st, mem := newWidgets(t)
	ctx := context.Background()
	w := mustCreate(t, st, widget("ns", "a", 1))
	for _, rv := range []string{"", "0", w.ResourceVersion} {
		got, _, err := st.Get(ctx, "ns", "a", meta.GetOptions{ResourceVersion: rv})
		if err != nil || got.ResourceVersion != w.ResourceVersion {
			t.Errorf("get at %q: %v %v", rv, err, got)
		}
	}
	latest, _ := mem.CurrentRevision(ctx)
	_, _, err := st.Get(ctx, "ns", "a", meta.GetOptions{ResourceVersion: strconv.FormatInt(latest+5, 10)})
	if s := meta.StatusOf(err); s.Code != 504 || s.Reason != meta.StatusReasonTimeout {
		t.Errorf("get from the future: %v, want 504 Timeout", err)
	}
	_, _, err = st.Get(ctx, "ns", "a", meta.GetOptions{ResourceVersion: "x"})
	wantStatus(t, err, 400, meta.StatusReasonBadRequest, `invalid resource version: resourceVersion: Invalid value: "x": strconv.ParseUint: parsing "x": invalid syntax`)
}
