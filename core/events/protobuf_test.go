package events

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/apikit-dev/apikit/internal/k8sproto/k8sprototest"
)

var (
	field     = k8sprototest.Bytes
	varint    = k8sprototest.Varint
	timestamp = k8sprototest.Timestamp
)

func str(b []byte, n protowire.Number, s string) []byte { return field(b, n, []byte(s)) }

// objectMeta and regarding are what an event recorder fills in.
var (
	objectMeta = str(str(nil, 1, "w.1872"), 3, "default")
	regarding  = str(str(str(str(str(nil, 1, "Widget"), 2, "default"), 3, "w"), 4, "u-1"), 5, "example.com/v1")
)

// TestProtobufToJSON decodes events as client-go's two recorders post
// them: record.EventRecorder's core/v1 Event and events.EventRecorder's
// events.k8s.io/v1 Event, each then decoded into its Go type.
func TestProtobufToJSON(t *testing.T) {
	core := field(nil, 1, objectMeta)
	core = field(core, 2, regarding)
	core = str(str(core, 3, "Reconciled"), 4, "reconciled by a")
	core = field(core, 5, str(nil, 1, "widget-operator"))
	core = field(field(core, 6, timestamp(1764590000, 0)), 7, timestamp(1764590005, 0))
	core = varint(core, 8, 3)
	core = str(core, 9, "Normal")
	core = field(core, 10, k8sprototest.ZeroTime)
	out, err := ProtobufToJSON(k8sprototest.Envelope("v1", "Event", core))
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	if err := json.Unmarshal(out, &ev); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if ev.Name != "w.1872" || ev.InvolvedObject.Kind != "Widget" || ev.InvolvedObject.UID != "u-1" || ev.InvolvedObject.APIVersion != "example.com/v1" ||
		ev.Reason != "Reconciled" || ev.Message != "reconciled by a" || ev.Source.Component != "widget-operator" || ev.Count != 3 ||
		ev.Type != "Normal" || ev.FirstTimestamp.Unix() != 1764590000 || ev.LastTimestamp.Unix() != 1764590005 || !ev.EventTime.IsZero() {
		t.Errorf("core/v1 event decoded as %+v from %s", ev, out)
	}
	// An unset eventTime (Go's zero time on the wire) is null, as
	// client-go writes it in JSON, not a time.
	if !strings.Contains(string(out), `"eventTime":null`) {
		t.Errorf("an unset eventTime was not null: %s", out)
	}

	v1 := field(nil, 1, objectMeta)
	v1 = field(v1, 2, timestamp(1764590000, 250000000))
	v1 = field(v1, 3, field(varint(nil, 1, 2), 2, timestamp(1764590009, 0)))
	v1 = str(str(str(str(v1, 4, "widget-operator"), 5, "op-a"), 6, "Reconcile"), 7, "Reconciled")
	v1 = field(v1, 8, regarding)
	v1 = str(str(v1, 10, "reconciled by a"), 11, "Normal")
	out, err = ProtobufToJSONV1(k8sprototest.Envelope("events.k8s.io/v1", "Event", v1))
	if err != nil {
		t.Fatal(err)
	}
	var e1 EventV1
	if err := json.Unmarshal(out, &e1); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if e1.Name != "w.1872" || e1.Regarding.Name != "w" || e1.ReportingController != "widget-operator" || e1.ReportingInstance != "op-a" ||
		e1.Action != "Reconcile" || e1.Reason != "Reconciled" || e1.Note != "reconciled by a" || e1.Type != "Normal" ||
		e1.EventTime.UnixMicro() != 1764590000250000 || e1.Series == nil || e1.Series.Count != 2 || e1.Series.LastObservedTime.Unix() != 1764590009 {
		t.Errorf("events.k8s.io/v1 event decoded as %+v from %s", e1, out)
	}
	if _, err := ProtobufToJSONV1(k8sprototest.Envelope("v1", "Pod", v1)); err == nil {
		t.Error("a Pod decoded as an Event")
	}
}

// FuzzProtobufToJSON: events are posted by clients in protobuf; whatever
// the body, both decoders fail cleanly or yield a JSON Event.
//
//	go test ./core/events -run - -fuzz FuzzProtobufToJSON -fuzztime 30s
func FuzzProtobufToJSON(f *testing.F) {
	f.Add(k8sprototest.Envelope("v1", "Event", field(field(nil, 2, regarding), 6, timestamp(1, 0))))
	f.Add(k8sprototest.Envelope("events.k8s.io/v1", "Event", field(field(nil, 3, varint(nil, 1, 2)), 2, k8sprototest.ZeroTime)))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, decode := range []func([]byte) ([]byte, error){ProtobufToJSON, ProtobufToJSONV1} {
			out, err := decode(body)
			if err != nil {
				continue
			}
			var obj map[string]any
			if err := json.Unmarshal(out, &obj); err != nil || obj["kind"] != "Event" {
				t.Fatalf("decoded %s: %v", out, err)
			}
		}
	})
}
