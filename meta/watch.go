package meta

import "encoding/json"

// EventType is the type of a watch event.
type EventType string

// Watch event types.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
	Error    EventType = "ERROR"
)

// InitialEventsAnnotation marks the bookmark that ends the initial events of
// a streaming list (sendInitialEvents=true).
const InitialEventsAnnotation = "k8s.io/initial-events-end"

// WatchEvent is one frame of a JSON watch stream.
type WatchEvent struct {
	Type   EventType       `json:"type"`
	Object json.RawMessage `json:"object"`
}
