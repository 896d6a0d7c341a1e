package events

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/apikit-dev/apikit/internal/k8sproto"
)

// ProtobufToJSON decodes a core v1 Event in protobuf (k8s.io/api/core/v1's
// field numbers), as client-go's record.EventRecorder posts and patches it.
func ProtobufToJSON(body []byte) ([]byte, error) {
	return k8sproto.ToJSON(body, "Event", func(obj k8sproto.Message, out map[string]any) error {
		obj.PutStrings(out, map[protowire.Number]string{3: "reason", 4: "message", 9: "type", 12: "action",
			14: "reportingComponent", 15: "reportingInstance"})
		obj.PutInt32(out, "count", 8)
		if err := putMessages(obj, out, map[protowire.Number]string{2: "involvedObject", 13: "related"}, objectReference); err != nil {
			return err
		}
		if err := putMessages(obj, out, map[protowire.Number]string{5: "source"}, eventSource); err != nil {
			return err
		}
		if err := putMessages(obj, out, map[protowire.Number]string{11: "series"}, eventSeries); err != nil {
			return err
		}
		return putTimes(obj, out, map[protowire.Number]string{6: "firstTimestamp", 7: "lastTimestamp"}, map[protowire.Number]string{10: "eventTime"})
	})
}

// ProtobufToJSONV1 decodes an events.k8s.io/v1 Event in protobuf
// (k8s.io/api/events/v1's field numbers), as client-go's events.EventRecorder
// (controller-runtime's GetEventRecorder) posts and patches it.
func ProtobufToJSONV1(body []byte) ([]byte, error) {
	return k8sproto.ToJSON(body, "Event", func(obj k8sproto.Message, out map[string]any) error {
		obj.PutStrings(out, map[protowire.Number]string{4: "reportingController", 5: "reportingInstance", 6: "action",
			7: "reason", 10: "note", 11: "type"})
		obj.PutInt32(out, "deprecatedCount", 15)
		if err := putMessages(obj, out, map[protowire.Number]string{8: "regarding", 9: "related"}, objectReference); err != nil {
			return err
		}
		if err := putMessages(obj, out, map[protowire.Number]string{12: "deprecatedSource"}, eventSource); err != nil {
			return err
		}
		if err := putMessages(obj, out, map[protowire.Number]string{3: "series"}, eventSeries); err != nil {
			return err
		}
		return putTimes(obj, out, map[protowire.Number]string{13: "deprecatedFirstTimestamp", 14: "deprecatedLastTimestamp"},
			map[protowire.Number]string{2: "eventTime"})
	})
}

// putMessages sets out[key] to the JSON form, by read, of each message
// field that fields names and the body carries.
func putMessages(obj k8sproto.Message, out map[string]any, fields map[protowire.Number]string,
	read func(k8sproto.Message) (map[string]any, error)) error {
	for n, key := range fields {
		m, ok, err := obj.Message(n)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		v, err := read(m)
		if err != nil {
			return err
		}
		out[key] = v
	}
	return nil
}

// putTimes sets the Time (times) and MicroTime (microTimes) fields.
func putTimes(obj k8sproto.Message, out map[string]any, times, microTimes map[protowire.Number]string) error {
	for n, key := range times {
		if err := obj.PutTime(out, key, n); err != nil {
			return err
		}
	}
	for n, key := range microTimes {
		if err := obj.PutMicroTime(out, key, n); err != nil {
			return err
		}
	}
	return nil
}

func objectReference(m k8sproto.Message) (map[string]any, error) {
	out := map[string]any{}
	m.PutStrings(out, map[protowire.Number]string{1: "kind", 2: "namespace", 3: "name", 4: "uid", 5: "apiVersion",
		6: "resourceVersion", 7: "fieldPath"})
	return out, nil
}

func eventSource(m k8sproto.Message) (map[string]any, error) {
	out := map[string]any{}
	m.PutStrings(out, map[protowire.Number]string{1: "component", 2: "host"})
	return out, nil
}

func eventSeries(m k8sproto.Message) (map[string]any, error) {
	out := map[string]any{}
	m.PutInt32(out, "count", 1)
	return out, m.PutMicroTime(out, "lastObservedTime", 2)
}
