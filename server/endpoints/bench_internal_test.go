package endpoints

import (
	"testing"

	"github.com/apikit-dev/apikit/meta"
)

type benchWidget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            struct {
		Size  int    `json:"size,omitempty"`
		Owner string `json:"owner,omitempty"`
		Parts []struct {
			Name string `json:"name"`
		} `json:"parts,omitempty"`
		Labels map[string]string `json:"labels,omitempty"`
	} `json:"spec,omitempty"`
}

// A kubectl create body of a typical size.
var createBody = []byte(`{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"ns",` +
	`"labels":{"app":"demo","tier":"backend"},"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},` +
	`"spec":{"size":3,"owner":"team-a","parts":[{"name":"a"},{"name":"b"},{"name":"c"}],"labels":{"x":"y"}}}`)

var benchGVK = meta.GroupVersionKind{Group: "test.example.com", Version: "v1", Kind: "Widget"}

func BenchmarkDecodeCreateBody(b *testing.B) {
	for _, level := range []string{meta.FieldValidationWarn, meta.FieldValidationStrict, meta.FieldValidationIgnore} {
		b.Run(level, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(createBody)))
			for b.Loop() {
				if _, err := decodeObject(createBody, &benchWidget{}, benchGVK, level); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
