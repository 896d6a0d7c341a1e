package events

import "github.com/apikit-dev/apikit/internal/k8sproto"

var (
	eventProtobuf   = k8sproto.NewDecoder[Event]("Event")
	eventV1Protobuf = k8sproto.NewDecoder[EventV1]("Event")
)

// ProtobufToJSON decodes a core v1 Event in protobuf (k8s.io/api/core/v1's
// field numbers, the protobuf tags on Event), as client-go's
// record.EventRecorder posts and patches it.
func ProtobufToJSON(body []byte) ([]byte, error) { return eventProtobuf.ToJSON(body) }

// ProtobufToJSONV1 decodes an events.k8s.io/v1 Event in protobuf
// (k8s.io/api/events/v1's field numbers, the protobuf tags on EventV1), as
// client-go's events.EventRecorder (controller-runtime's GetEventRecorder)
// posts and patches it.
func ProtobufToJSONV1(body []byte) ([]byte, error) { return eventV1Protobuf.ToJSON(body) }
