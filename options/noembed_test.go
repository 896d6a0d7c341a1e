//go:build apikit_noembed

package options

import (
	"strings"
	"testing"
)

// Run with: go test -tags apikit_noembed -run NoEmbed ./options
func TestNoEmbedValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    EtcdOptions
		wantErr string
	}{
		{name: "default backend", opts: EtcdOptions{DataDir: "/tmp/x"}, wantErr: "built with -tags apikit_noembed"},
		{name: "embedded asked for", opts: EtcdOptions{StorageBackend: BackendEmbedded, DataDir: "/tmp/x"}, wantErr: "built with -tags apikit_noembed"},
		{name: "etcd cluster", opts: EtcdOptions{ServerList: []string{"https://127.0.0.1:2379"}}},
		{name: "memory", opts: EtcdOptions{StorageBackend: BackendMemory}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewEtcdOptions()
			o.StorageBackend, o.ServerList, o.DataDir = tc.opts.StorageBackend, tc.opts.ServerList, tc.opts.DataDir
			var got []string
			for _, err := range o.Validate() {
				got = append(got, err.Error())
			}
			joined := strings.Join(got, "; ")
			if tc.wantErr == "" && joined != "" || !strings.Contains(joined, tc.wantErr) {
				t.Fatalf("Validate = %q, want an error containing %q", joined, tc.wantErr)
			}
		})
	}
}
