package k8sproto_test

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/apikit-dev/apikit/internal/k8sproto"
	pb "github.com/apikit-dev/apikit/internal/k8sproto/k8sprototest"
	"github.com/apikit-dev/apikit/meta"
)

// widget has a field of every form the decoder reads.
type widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Spec            widgetSpec `json:"spec" protobuf:"2"`
	NotOnTheWire    string     `json:"notOnTheWire,omitempty"`
}

type widgetSpec struct {
	Name     string              `json:"name" protobuf:"1"`
	Nick     *string             `json:"nick,omitempty" protobuf:"2"`
	Tags     []string            `json:"tags,omitempty" protobuf:"3"`
	Labels   map[string]string   `json:"labels,omitempty" protobuf:"4"`
	Parts    map[string]part     `json:"parts,omitempty" protobuf:"5"`
	On       bool                `json:"on" protobuf:"6"`
	Maybe    *bool               `json:"maybe,omitempty" protobuf:"7"`
	Count    int32               `json:"count" protobuf:"8"`
	Limit    *int64              `json:"limit,omitempty" protobuf:"9"`
	Ratio    *float64            `json:"ratio,omitempty" protobuf:"10"`
	CA       []byte              `json:"ca,omitempty" protobuf:"11"`
	Since    meta.Time           `json:"since,omitzero" protobuf:"12"`
	Until    *meta.Time          `json:"until,omitempty" protobuf:"13"`
	Default  json.RawMessage     `json:"default,omitempty" protobuf:"14"`
	Enum     []json.RawMessage   `json:"enum,omitempty" protobuf:"15"`
	Main     part                `json:"main" protobuf:"16"`
	Spare    *part               `json:"spare,omitempty" protobuf:"17"`
	List     []part              `json:"list,omitempty" protobuf:"18"`
	Ports    []int32             `json:"ports,omitempty" protobuf:"19"`
	Schema   json.RawMessage     `json:"schema,omitempty" protobuf:"20,as=Node"`
	Selector *meta.LabelSelector `json:"selector,omitempty" protobuf:"21"`
	Extra    map[string][]string `json:"extra,omitempty" protobuf:"22"`
}

type part struct {
	Size int64  `json:"size,omitempty" protobuf:"1"`
	Kind string `json:"kind,omitempty" protobuf:"2"`
}

// node is recursive, as a CRD's JSONSchemaProps is.
type node struct {
	Name     string          `json:"name,omitempty" protobuf:"1"`
	Children map[string]node `json:"children,omitempty" protobuf:"2"`
	Next     *node           `json:"next,omitempty" protobuf:"3"`
}

var widgets = k8sproto.NewDecoder[widget]("Widget", k8sproto.As[node]("Node"))

func entry(k string, v []byte) []byte { return pb.Bytes(pb.Bytes(nil, 1, []byte(k)), 2, v) }

func str(b []byte, n protowire.Number, s string) []byte { return pb.Bytes(b, n, []byte(s)) }

// fullSpec sets every field of widgetSpec.
func fullSpec() []byte {
	var b []byte
	b = str(b, 1, "w")
	b = str(b, 2, "dub")
	b = str(str(b, 3, "a"), 3, "b")
	b = pb.Bytes(b, 4, entry("team", []byte("x")))
	b = pb.Bytes(b, 5, entry("wheel", pb.Varint(str(nil, 2, "round"), 1, 4)))
	b = pb.Varint(b, 6, 1)
	b = pb.Varint(b, 7, 0)
	b = pb.Varint(b, 8, -3)
	b = pb.Varint(b, 9, 1<<40)
	b = protowire.AppendFixed64(protowire.AppendTag(b, 10, protowire.Fixed64Type), math.Float64bits(0.5))
	b = pb.Bytes(b, 11, []byte{0, 1, 2})
	b = pb.Bytes(b, 12, pb.Timestamp(1700000000, 0))
	b = pb.Bytes(b, 13, pb.ZeroTime)
	b = pb.Bytes(b, 14, str(nil, 1, `{"a":1}`))
	b = pb.Bytes(pb.Bytes(b, 15, str(nil, 1, `"s"`)), 15, str(nil, 1, `2`))
	b = pb.Bytes(b, 16, pb.Varint(nil, 1, 9))
	b = pb.Bytes(b, 16, str(nil, 2, "merged")) // a message field given twice merges
	b = pb.Bytes(b, 17, nil)
	b = pb.Bytes(pb.Bytes(b, 18, str(nil, 2, "one")), 18, nil)
	b = pb.Varint(b, 19, 80)                                                            // unpacked
	b = pb.Bytes(b, 19, protowire.AppendVarint(protowire.AppendVarint(nil, 443), 8443)) // packed
	b = pb.Bytes(b, 20, pb.Bytes(str(nil, 1, "root"), 2, entry("kid", pb.Bytes(nil, 3, str(nil, 1, "grandkid")))))
	b = pb.Bytes(b, 21, pb.Bytes(nil, 2, str(str(str(nil, 1, "env"), 2, "In"), 3, "prod")))
	b = pb.Bytes(b, 22, entry("scopes", pb.Varint(str(str(nil, 1, "a"), 1, "b"), 2, 1))) // a list as a map's value: its items in field 1
	b = pb.Varint(b, 99, 7)                                                              // unknown fields are skipped
	return b
}

func TestDecoderToJSON(t *testing.T) {
	metadata := str(str(nil, 1, "w"), 3, "ns")
	metadata = pb.Bytes(metadata, 11, entry("app", []byte("a")))
	metadata = pb.Bytes(metadata, 8, pb.ZeroTime)
	for _, tc := range []struct {
		name   string
		object []byte
		want   string
	}{
		{"every form", pb.Bytes(pb.Bytes(nil, 1, metadata), 2, fullSpec()),
			`{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","namespace":"ns","labels":{"app":"a"}},"spec":{` +
				`"name":"w","nick":"dub","tags":["a","b"],"labels":{"team":"x"},"parts":{"wheel":{"size":4,"kind":"round"}},"on":true,"maybe":false,` +
				`"count":-3,"limit":1099511627776,"ratio":0.5,"ca":"AAEC","since":"2023-11-14T22:13:20Z","until":null,"default":{"a":1},"enum":["s",2],` +
				`"main":{"size":9,"kind":"merged"},"spare":{},"list":[{"kind":"one"},{}],"ports":[80,443,8443],` +
				`"schema":{"name":"root","children":{"kid":{"next":{"name":"grandkid"}}}},` +
				`"selector":{"matchExpressions":[{"key":"env","operator":"In","values":["prod"]}]},"extra":{"scopes":["a","b"]}}}`},
		{"empty object", nil,
			`{"kind":"Widget","apiVersion":"example.com/v1","metadata":{},"spec":{"name":"","on":false,"count":0,"main":{}}}`},
		{"last scalar wins", pb.Bytes(nil, 2, str(str(nil, 1, "first"), 1, "second")),
			`{"kind":"Widget","apiVersion":"example.com/v1","metadata":{},"spec":{"name":"second","on":false,"count":0,"main":{}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := widgets.ToJSON(pb.Envelope("example.com/v1", "Widget", tc.object))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestUnsetTimes: client-go writes an unset Time as an empty message;
// it is unset, as apimachinery reads it, not the Unix epoch. So is Go's
// zero time in seconds.
func TestUnsetTimes(t *testing.T) {
	for name, unset := range map[string][]byte{"empty message": pb.ZeroTime, "Go's zero time": pb.GoZeroTime} {
		t.Run(name, func(t *testing.T) {
			spec := pb.Bytes(pb.Bytes(nil, 12, unset), 13, unset)
			got, err := widgets.ToJSON(pb.Envelope("example.com/v1", "Widget", pb.Bytes(pb.Bytes(nil, 1, pb.Bytes(nil, 8, unset)), 2, spec)))
			if err != nil {
				t.Fatal(err)
			}
			// since is omitzero; until, a pointer, is set to the zero
			// time, which is null, as client-go writes it in JSON.
			want := `{"kind":"Widget","apiVersion":"example.com/v1","metadata":{},"spec":{"name":"","on":false,"count":0,"until":null,"main":{}}}`
			if string(got) != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestDecoderErrors(t *testing.T) {
	env := func(obj []byte) []byte { return pb.Envelope("example.com/v1", "Widget", obj) }
	cannot := `Widget in version "v1" cannot be handled as a Widget: `
	// nested is depth node messages each in the next's field 3, built
	// backwards so that it takes linear time.
	nested := func(depth int) []byte {
		var rev []byte
		for range depth {
			l := protowire.AppendVarint(nil, uint64(len(rev)))
			slices.Reverse(l)
			rev = append(append(rev, l...), byte(protowire.EncodeTag(3, protowire.BytesType)))
		}
		slices.Reverse(rev)
		return env(pb.Bytes(nil, 2, pb.Bytes(nil, 20, rev)))
	}
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"empty", nil, "the object provided is unrecognized (must be of type Widget): empty data (<empty>)"},
		{"JSON", []byte(`{"kind":"Widget"}`), "the object provided is unrecognized (must be of type Widget): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] ({\"kind\":\"Widget\"})"},
		{"magic only", []byte("k8s\x00"), "the object provided is unrecognized (must be of type Widget): empty body (6b387300)"},
		{"envelope truncated", []byte("k8s\x00\x0a\x05ab"), "the object provided is unrecognized (must be of type Widget): unexpected EOF (6b3873000a056162)"},
		{"no kind", pb.Envelope("example.com/v1", "", nil), "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in"},
		{"other kind", pb.Envelope("example.com/v1", "Gadget", nil), `Gadget in version "v1" cannot be handled as a Widget: the kind in the data is not Widget`},
		{"truncated field", env(pb.Bytes(nil, 2, []byte{0x0a, 0x09})), cannot + "unexpected EOF"},
		{"length beyond the body", env(pb.Bytes(nil, 2, []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 'x'})), cannot + "unexpected EOF"},
		{"wrong wire type", env(pb.Bytes(nil, 2, pb.Varint(nil, 1, 5))), cannot + "proto: wrong wireType = 0 for field Name"},
		{"string where a number is", env(pb.Bytes(nil, 2, str(nil, 8, "3"))), cannot + "proto: wrong wireType = 2 for field Count"},
		{"bad time", env(pb.Bytes(nil, 2, pb.Bytes(nil, 12, pb.Timestamp(0, -1)))), cannot + "nanos -1 out of range"},
		{"raw JSON that is not JSON", env(pb.Bytes(nil, 2, pb.Bytes(nil, 14, str(nil, 1, "{")))), cannot + "json: error calling MarshalJSON"},
		{"NaN", env(pb.Bytes(nil, 2, protowire.AppendFixed64(protowire.AppendTag(nil, 10, protowire.Fixed64Type), math.Float64bits(math.NaN())))), cannot + "json: unsupported value: NaN"},
		{"too deep", nested(20000), cannot + "exceeded max depth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := widgets.ToJSON(tc.body)
			if err == nil {
				t.Fatalf("decoded to %s, want error %q", got, tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q, want %q", err, tc.want)
			}
		})
	}
	if _, err := widgets.ToJSON(nested(100)); err != nil {
		t.Errorf("100 levels: %v", err)
	}
}

func TestNewDecoderRefusesBadTags(t *testing.T) {
	type badNumber struct {
		A string `protobuf:"x"`
	}
	type twice struct {
		A string `protobuf:"1"`
		B string `protobuf:"1"`
	}
	type asOnString struct {
		A string `protobuf:"1,as=Node"`
	}
	type unregistered struct {
		A json.RawMessage `protobuf:"1,as=Nothing"`
	}
	type unsupported struct {
		A any `protobuf:"1"`
	}
	type deep struct {
		B struct {
			C map[int]string `protobuf:"1"`
		} `protobuf:"1"`
	}
	for name, build := range map[string]func(){
		"bad number":               func() { k8sproto.NewDecoder[badNumber]("X") },
		"number twice":             func() { k8sproto.NewDecoder[twice]("X") },
		"as on a string":           func() { k8sproto.NewDecoder[asOnString]("X", k8sproto.As[node]("Node")) },
		"as unregistered":          func() { k8sproto.NewDecoder[unregistered]("X") },
		"interface":                func() { k8sproto.NewDecoder[unsupported]("X") },
		"int keys, one level down": func() { k8sproto.NewDecoder[deep]("X") },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("NewDecoder took the type")
				}
			}()
			build()
		})
	}
}

// FuzzDecoder: a protobuf body is client input; whatever it holds, the
// decoder neither panics nor allocates beyond what the body can carry,
// and what it returns is JSON.
func FuzzDecoder(f *testing.F) {
	f.Add(pb.Envelope("example.com/v1", "Widget", pb.Bytes(nil, 2, fullSpec())))
	f.Add(pb.Envelope("example.com/v1", "Widget", pb.Bytes(nil, 2, []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})))
	f.Add([]byte("k8s\x00"))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := widgets.ToJSON(body)
		if err != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("decoded %x to invalid JSON %s", body, got)
		}
		// Every byte of output stems from the body: no decoded value is
		// larger than a small multiple of it (base64, JSON escapes, the
		// fields a zero message still writes).
		if len(got) > 8*len(body)+4096 {
			t.Fatalf("%d bytes decoded to %d", len(body), len(got))
		}
		if bytes.Contains(got, []byte(`"notOnTheWire"`)) {
			t.Fatalf("an untagged field was filled: %s", got)
		}
	})
}
