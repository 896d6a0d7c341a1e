package leases

import (
	"encoding/json"
	"testing"

	"github.com/apikit-dev/apikit/internal/k8sproto/k8sprototest"
)

var (
	field     = k8sprototest.Bytes
	varint    = k8sprototest.Varint
	timestamp = k8sprototest.Timestamp
)

func envelope(object []byte) []byte {
	return k8sprototest.Envelope("coordination.k8s.io/v1", "Lease", object)
}

// TestProtobufToJSON decodes what client-go's leader election writes: a
// held lease, and a released one (an empty holder, which is set, not
// absent, and Go's zero time for the acquire time, which is null, as
// client-go writes that time in JSON, and so no time once decoded).
func TestProtobufToJSON(t *testing.T) {
	meta := field(field(nil, 1, []byte("op")), 3, []byte("kube-system"))
	for _, tc := range []struct {
		name string
		spec []byte
		want string
	}{{
		name: "held",
		spec: varint(varint(field(field(field(nil, 1, []byte("a_1")), 3, timestamp(1764590000, 123456000)),
			4, timestamp(1764590010, 0)), 2, 15), 5, 2),
		want: `{"holderIdentity":"a_1","leaseDurationSeconds":15,"acquireTime":"2025-12-01T11:53:20.123456Z","renewTime":"2025-12-01T11:53:30.000000Z","leaseTransitions":2}`,
	}, {
		name: "released",
		spec: varint(field(field(field(nil, 1, nil), 3, k8sprototest.ZeroTime), 4, timestamp(1764590010, 0)), 2, 1),
		want: `{"holderIdentity":"","leaseDurationSeconds":1,"acquireTime":null,"renewTime":"2025-12-01T11:53:30.000000Z"}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ProtobufToJSON(envelope(field(field(nil, 1, meta), 2, tc.spec)))
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Metadata map[string]any  `json:"metadata"`
				Spec     json.RawMessage `json:"spec"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if string(got.Spec) != tc.want || got.Metadata["name"] != "op" || got.Metadata["namespace"] != "kube-system" {
				t.Errorf("got %s\nwant spec %s", out, tc.want)
			}
			var l Lease
			if err := json.Unmarshal(out, &l); err != nil {
				t.Fatal(err)
			}
			if l.Spec.RenewTime == nil || l.Spec.RenewTime.Unix() != 1764590010 || (l.Spec.AcquireTime == nil) != (tc.name == "released") {
				t.Errorf("decoded into %+v", l.Spec)
			}
		})
	}
	bad := field(nil, 2, field(nil, 3, timestamp(1, 2_000_000_000)))
	if _, err := ProtobufToJSON(envelope(bad)); err == nil {
		t.Error("nanos of 2 s decoded")
	}
}

// FuzzProtobufToJSON: leases are written by clients in protobuf; whatever
// the body, the decoder fails cleanly or yields a JSON object.
//
//	go test ./core/leases -run - -fuzz FuzzProtobufToJSON -fuzztime 30s
func FuzzProtobufToJSON(f *testing.F) {
	f.Add(envelope(field(nil, 2, varint(field(nil, 1, []byte("a")), 2, 15))))
	f.Add(envelope(field(nil, 2, field(nil, 3, k8sprototest.ZeroTime))))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := ProtobufToJSON(body)
		if err != nil {
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(out, &obj); err != nil || obj["kind"] != "Lease" {
			t.Fatalf("decoded %s: %v", out, err)
		}
	})
}
