package endpoints

import "testing"

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
