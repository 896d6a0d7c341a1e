package endpoints

import (
	"mime"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/internal/race"
	"github.com/apikit-dev/apikit/meta"
)

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct {
		accept    string
		transform bool
		want      outputForm
		err       bool
	}{
		{"", true, formJSON, false},
		{"  ", true, formJSON, false},
		{"application/json", true, formJSON, false},
		{"application/json; charset=utf-8", true, formJSON, false},
		{"*/*", true, formJSON, false},
		{"application/*", true, formJSON, false},
		{"application/yaml", true, formYAML, false},
		{"text/yaml", false, formYAML, false},
		{"application/x-yaml", false, formYAML, false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", true, formTable, false},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io", true, formTable, false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", true, formTable, false},
		{"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", true, formPartialMetadata, false},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", true, formPartialMetadata, false},
		// Transformations are for reads only; writes fall back to the
		// next acceptable type, or refuse.
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", false, formJSON, false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", false, 0, true},
		// Unknown transformations and groups are skipped.
		{"application/json;as=Table;v=v2;g=meta.k8s.io,application/yaml", true, formYAML, false},
		{"application/json;as=Table;v=v1;g=other.io", true, 0, true},
		{"application/json;as=Scale;v=v1;g=meta.k8s.io,application/json", true, formJSON, false},
		{"application/vnd.kubernetes.protobuf,application/json", true, formJSON, false},
		{"application/vnd.kubernetes.protobuf", true, 0, true},
		{"application/xml", true, 0, true},
		{";;;,application/json", true, formJSON, false},
	} {
		got, err := negotiate(tc.accept, tc.transform)
		if (err != nil) != tc.err || (err == nil && got != tc.want) {
			t.Errorf("negotiate(%q, %v) = %v, %v; want %v (error %v)", tc.accept, tc.transform, got, err, tc.want, tc.err)
		}
	}
}

// negotiateByParse is negotiate as it was before its parameterless fast
// path: every entry through mime.ParseMediaType.
func negotiateByParse(accept string, allowTransform bool) (outputForm, error) {
	if strings.TrimSpace(accept) == "" {
		return formJSON, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if params["as"] != "" {
			if form, ok := transformForm(mt, params, allowTransform); ok {
				return form, nil
			}
			continue
		}
		switch mt {
		case "application/json", "application/*", "*/*", "application/json-patch+json", "application/merge-patch+json":
			return formJSON, nil
		case "application/yaml", "text/yaml", "application/x-yaml":
			return formYAML, nil
		}
	}
	return formJSON, meta.NewNotAcceptable(supportedOutputs)
}

var negotiateSeeds = []string{
	"", " ", ",", "application/json", "APPLICATION/JSON", "Application/Yaml", " application/json ,*/*",
	"application/jſon", "application/json\u212a", "text/yaml,application/json", "application / json",
	"application/json;", "application/json;as=Table;v=v1;g=meta.k8s.io", "*/*;q=0.8",
	"application/vnd.kubernetes.protobuf,application/json", "application/vnd.kubernetes.protobuf",
	"application/json-patch+json", "APPLICATION/MERGE-PATCH+JSON", "application/x-yaml,", ",,application/*",
	"application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io,application/json",
	"text/html", "application/json\x00", "*/", "/", "application/", "application/json;charset=utf-8",
}

// TestNegotiateAsParsed: the fast path for entries without parameters
// answers every Accept header as parsing each entry did.
func TestNegotiateAsParsed(t *testing.T) {
	for _, accept := range negotiateSeeds {
		for _, transform := range []bool{true, false} {
			got, gotErr := negotiate(accept, transform)
			want, wantErr := negotiateByParse(accept, transform)
			if got != want || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("negotiate(%q, %v) = %v, %v; by parsing %v, %v", accept, transform, got, gotErr, want, wantErr)
			}
		}
	}
}

// FuzzNegotiate compares negotiate with negotiateByParse on any Accept
// header:
//
//	go test ./server/endpoints -run - -fuzz FuzzNegotiate -fuzztime 30s
func FuzzNegotiate(f *testing.F) {
	for _, s := range negotiateSeeds {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, accept string, transform bool) {
		got, gotErr := negotiate(accept, transform)
		want, wantErr := negotiateByParse(accept, transform)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("negotiate(%q, %v) = %v, %v; by parsing %v, %v", accept, transform, got, gotErr, want, wantErr)
		}
	})
}

// TestNegotiateAllocations: an Accept header of media types without
// parameters, as clients send on a GET, is read without allocating (a
// slice of its entries and a map of each one's parameters before).
func TestNegotiateAllocations(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates on its own")
	}
	for _, accept := range []string{"application/json", "application/json, */*", "application/yaml"} {
		if allocs := testing.AllocsPerRun(100, func() { _, _ = negotiate(accept, true) }); allocs > 0 {
			t.Errorf("negotiate(%q): %v allocations, want 0", accept, allocs)
		}
	}
}
