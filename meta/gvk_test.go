package meta

import "testing"

func TestParseGroupVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    GroupVersion
		wantErr string
	}{
		{"", GroupVersion{}, ""},
		{"/", GroupVersion{}, ""},
		{"v1", GroupVersion{Version: "v1"}, ""},
		{"apps/v1", GroupVersion{Group: "apps", Version: "v1"}, ""},
		{"wardle.example.com/v1alpha1", GroupVersion{Group: "wardle.example.com", Version: "v1alpha1"}, ""},
		{"apps/", GroupVersion{Group: "apps"}, ""},
		{"/v1", GroupVersion{Version: "v1"}, ""},
		{"a/b/c", GroupVersion{}, "unexpected GroupVersion string: a/b/c"},
	}
	for _, tt := range tests {
		got, err := ParseGroupVersion(tt.in)
		if got != tt.want || errString(err) != tt.wantErr {
			t.Errorf("ParseGroupVersion(%q) = %+v, %v; want %+v, %q", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err == nil && tt.in != "" && tt.in != "/" && tt.in != "/v1" {
			if s := got.String(); s != tt.in {
				t.Errorf("ParseGroupVersion(%q).String() = %q", tt.in, s)
			}
		}
	}
}

func TestGroupVersionNames(t *testing.T) {
	gv := GroupVersion{Group: "wardle.example.com", Version: "v1alpha1"}
	gvk := gv.WithKind("Flunder")
	gvr := gv.WithResource("flunders")
	tests := []struct{ got, want string }{
		{gv.String(), "wardle.example.com/v1alpha1"},
		{GroupVersion{Version: "v1"}.String(), "v1"},
		{gvk.GroupKind().String(), "Flunder.wardle.example.com"},
		{GroupKind{Kind: "Pod"}.String(), "Pod"},
		{gvr.GroupResource().String(), "flunders.wardle.example.com"},
		{GroupResource{Resource: "pods"}.String(), "pods"},
		{gvk.GroupVersion().String(), gv.String()},
		{gvr.GroupVersion().String(), gv.String()},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
