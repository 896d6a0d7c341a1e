package meta

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestParseListOptions(t *testing.T) {
	const invalid = `ListOptions.meta.k8s.io "" is invalid: `
	tests := []struct {
		name       string
		query      string
		check      func(t *testing.T, o ListOptions)
		wantCode   int32
		wantReason StatusReason
		wantErr    string
	}{
		{name: "empty", query: "", check: func(t *testing.T, o ListOptions) {
			if o.Watch || o.Limit != 0 || o.TimeoutSeconds != nil || o.SendInitialEvents != nil {
				t.Errorf("got %+v", o)
			}
		}},
		{name: "selectors and paging", query: "labelSelector=app%3Dweb&fieldSelector=metadata.name%3Dx&limit=50&continue=abc&timeoutSeconds=30",
			check: func(t *testing.T, o ListOptions) {
				if o.LabelSelector != "app=web" || o.FieldSelector != "metadata.name=x" || o.Limit != 50 || o.Continue != "abc" ||
					o.TimeoutSeconds == nil || *o.TimeoutSeconds != 30 {
					t.Errorf("got %+v", o)
				}
			}},
		{name: "watch true", query: "watch=true", check: wantWatch(true)},
		{name: "watch 1", query: "watch=1", check: wantWatch(true)},
		{name: "watch without value", query: "watch", check: wantWatch(true)},
		{name: "watch any other word", query: "watch=yes", check: wantWatch(true)},
		{name: "watch false", query: "watch=false", check: wantWatch(false)},
		{name: "watch FALSE", query: "watch=FALSE", check: wantWatch(false)},
		{name: "watch 0", query: "watch=0", check: wantWatch(false)},
		{name: "streaming list without bookmarks", query: "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
			check: func(t *testing.T, o ListOptions) {
				if !o.Watch || o.AllowWatchBookmarks || o.SendInitialEvents == nil || !*o.SendInitialEvents {
					t.Errorf("got %+v", o)
				}
			}},
		{name: "exact read", query: "resourceVersion=5&resourceVersionMatch=Exact", check: func(t *testing.T, o ListOptions) {
			if o.ResourceVersion != "5" || o.ResourceVersionMatch != ResourceVersionMatchExact {
				t.Errorf("got %+v", o)
			}
		}},
		{name: "streaming list", query: "watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan",
			check: func(t *testing.T, o ListOptions) {
				if !o.Watch || !o.AllowWatchBookmarks || o.SendInitialEvents == nil || !*o.SendInitialEvents {
					t.Errorf("got %+v", o)
				}
			}},

		{name: "bad limit", query: "limit=ten", wantCode: http.StatusBadRequest, wantReason: StatusReasonBadRequest,
			wantErr: `invalid value "ten" for query parameter limit: must be an integer`},
		{name: "bad timeout", query: "timeoutSeconds=1.5", wantCode: http.StatusBadRequest, wantReason: StatusReasonBadRequest,
			wantErr: `invalid value "1.5" for query parameter timeoutSeconds: must be an integer`},
		// kube-apiserver lists everything for a negative limit.
		{name: "negative limit", query: "limit=-1", check: func(t *testing.T, o ListOptions) {
			if o.Limit != 0 {
				t.Errorf("Limit = %d, want 0 (none)", o.Limit)
			}
		}},
		{name: "match without resourceVersion", query: "resourceVersionMatch=NotOlderThan", wantCode: http.StatusUnprocessableEntity, wantReason: StatusReasonInvalid,
			wantErr: invalid + `resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided`},
		{name: "match with continue", query: "resourceVersion=1&resourceVersionMatch=NotOlderThan&continue=abc", wantCode: http.StatusUnprocessableEntity, wantReason: StatusReasonInvalid,
			wantErr: invalid + `resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided`},
		{name: "unknown match", query: "resourceVersion=1&resourceVersionMatch=Newest", wantCode: http.StatusUnprocessableEntity, wantReason: StatusReasonInvalid,
			wantErr: invalid + `resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""`},
		{name: "exact zero", query: "resourceVersion=0&resourceVersionMatch=Exact", wantCode: http.StatusUnprocessableEntity, wantReason: StatusReasonInvalid,
			wantErr: invalid + `resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"`},
		{name: "several problems", query: "resourceVersionMatch=Newest&continue=abc", wantCode: http.StatusUnprocessableEntity, wantReason: StatusReasonInvalid,
			wantErr: invalid + `[resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, ` +
				`resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided, ` +
				`resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""]`},
		{name: "initial events on list", query: "sendInitialEvents=true", wantCode: http.StatusUnprocessableEntity, wantReason: StatusReasonInvalid,
			wantErr: invalid + `sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list`},
		{name: "initial events without match", query: "watch=1&sendInitialEvents=true", wantCode: http.StatusUnprocessableEntity, wantReason: StatusReasonInvalid,
			wantErr: invalid + `resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan`},
		{name: "watch match without initial events", query: "watch=1&resourceVersionMatch=NotOlderThan", wantCode: http.StatusUnprocessableEntity, wantReason: StatusReasonInvalid,
			wantErr: invalid + `resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided`},
		{name: "watch exact", query: "watch=1&sendInitialEvents=false&resourceVersionMatch=Exact", wantCode: http.StatusUnprocessableEntity, wantReason: StatusReasonInvalid,
			wantErr: invalid + `[resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, ` +
				`resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]`},
		{name: "watch match with continue", query: "watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&continue=c", wantCode: http.StatusUnprocessableEntity, wantReason: StatusReasonInvalid,
			wantErr: invalid + `resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			o, err := ParseListOptions(q)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseListOptions(%s) = %+v, want error", tt.query, o)
				}
				s := StatusOf(err)
				if err.Error() != tt.wantErr || s.Code != tt.wantCode || s.Reason != tt.wantReason {
					t.Fatalf("error\n got: %d %s %s\nwant: %d %s %s", s.Code, s.Reason, err, tt.wantCode, tt.wantReason, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseListOptions(%s): %v", tt.query, err)
			}
			tt.check(t, o)
		})
	}
}

func wantWatch(want bool) func(*testing.T, ListOptions) {
	return func(t *testing.T, o ListOptions) {
		if o.Watch != want {
			t.Errorf("Watch = %v, want %v", o.Watch, want)
		}
	}
}

func TestParseWriteOptions(t *testing.T) {
	tests := []struct {
		query   string
		wantErr string // %s is the options' kind
		invalid bool   // 422 Invalid, else 400 BadRequest
	}{
		{"", "", false},
		{"dryRun=All&fieldManager=kubectl&fieldValidation=Strict", "", false},
		// kube-apiserver's ValidateDryRun.
		{"dryRun=Some", `%s.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"`, true},
		{"dryRun=All&dryRun=Bogus", `%s.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["All","Bogus"]: supported values: "All"`, true},
		// kube-apiserver's ValidateFieldValidation and ValidateFieldManager.
		{"fieldValidation=Loose", `%s.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"`, true},
		{"fieldManager=" + strings.Repeat("m", 129), `%s.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes`, true},
		{"fieldManager=a%07b&dryRun=Some&fieldValidation=Loose", `%s.meta.k8s.io "" is invalid: [fieldManager: Invalid value: "a\ab": invalid character U+0007 (at position 1), dryRun: Unsupported value: ["Some"]: supported values: "All", fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"]`, true},
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		for kind, parse := range map[string]func(url.Values) error{
			"CreateOptions": func(q url.Values) error { _, err := ParseCreateOptions(q); return err },
			"UpdateOptions": func(q url.Values) error { _, err := ParseUpdateOptions(q); return err },
			"PatchOptions":  func(q url.Values) error { _, err := ParsePatchOptions(q); return err },
		} {
			err := parse(q)
			want := tt.wantErr
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, kind)
			}
			if got := errString(err); got != want {
				t.Errorf("%s %q: error %q, want %q", kind, tt.query, got, want)
			}
			if err != nil && tt.invalid != IsInvalid(err) {
				t.Errorf("%s %q: %v: Invalid is %v, want %v", kind, tt.query, err, IsInvalid(err), tt.invalid)
			}
			if err != nil && !tt.invalid && !IsBadRequest(err) {
				t.Errorf("%s %q: %v is not a BadRequest", kind, tt.query, err)
			}
		}
	}
	o, err := ParsePatchOptions(url.Values{"force": {"true"}, "dryRun": {"All"}})
	if err != nil || o.Force == nil || !*o.Force || len(o.DryRun) != 1 {
		t.Errorf("ParsePatchOptions = %+v, %v", o, err)
	}
}

func TestParseDeleteQuery(t *testing.T) {
	q := url.Values{"gracePeriodSeconds": {"0"}, "propagationPolicy": {"Foreground"}, "dryRun": {"All"}}
	var o DeleteOptions
	if err := ParseDeleteQuery(q, &o); err != nil {
		t.Fatal(err)
	}
	if o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 || o.PropagationPolicy == nil || *o.PropagationPolicy != DeletePropagationForeground ||
		len(o.DryRun) != 1 {
		t.Errorf("got %+v", o)
	}
	var orphan DeleteOptions
	if err := ParseDeleteQuery(url.Values{"orphanDependents": {"false"}}, &orphan); err != nil || orphan.OrphanDependents == nil || *orphan.OrphanDependents {
		t.Errorf("orphanDependents=false: %+v, %v", orphan, err)
	}
	const invalid = `DeleteOptions.meta.k8s.io "" is invalid: `
	for _, tc := range []struct {
		q    url.Values
		body DeleteOptions
		want string
	}{
		{url.Values{"propagationPolicy": {"Sideways"}}, DeleteOptions{},
			invalid + `propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"`},
		// kube-apiserver's ValidateDeleteOptions: not both, in the
		// query, the body or one in each.
		{url.Values{"propagationPolicy": {"Foreground"}, "orphanDependents": {"false"}}, DeleteOptions{},
			invalid + `propagationPolicy: Invalid value: "Foreground": orphanDependents and deletionPropagation cannot be both set`},
		{url.Values{"orphanDependents": {"true"}}, DeleteOptions{PropagationPolicy: ptrTo(DeletePropagationOrphan)},
			invalid + `propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set`},
		{url.Values{"dryRun": {"Bogus"}}, DeleteOptions{},
			invalid + `dryRun: Unsupported value: ["Bogus"]: supported values: "All"`},
		{nil, DeleteOptions{OrphanDependents: ptrTo(true), PropagationPolicy: ptrTo(DeletionPropagation("x")), DryRun: []string{"x"}},
			invalid + `[propagationPolicy: Invalid value: "x": orphanDependents and deletionPropagation cannot be both set, ` +
				`propagationPolicy: Unsupported value: "x": supported values: "Foreground", "Background", "Orphan", "nil", ` +
				`dryRun: Unsupported value: ["x"]: supported values: "All"]`},
	} {
		o := tc.body
		err := ParseDeleteQuery(tc.q, &o)
		if errString(err) != tc.want || !IsInvalid(err) {
			t.Errorf("%v %+v: error %q, want %q", tc.q, tc.body, errString(err), tc.want)
		}
	}
	checkJSON(t, DeleteOptions{TypeMeta: TypeMeta{Kind: "DeleteOptions", APIVersion: "v1"}, GracePeriodSeconds: o.GracePeriodSeconds, PropagationPolicy: o.PropagationPolicy},
		`{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0,"propagationPolicy":"Foreground"}`)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func ptrTo[T any](v T) *T { return &v }
