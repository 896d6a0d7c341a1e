package meta

import (
	"encoding/json"
	"testing"
)

func TestWatchEventJSON(t *testing.T) {
	obj := json.RawMessage(`{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1","metadata":{"name":"x","resourceVersion":"7","creationTimestamp":null}}`)
	tests := []struct {
		name string
		ev   WatchEvent
		want string
	}{
		{"added", WatchEvent{Type: Added, Object: obj},
			`{"type":"ADDED","object":{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1","metadata":{"name":"x","resourceVersion":"7","creationTimestamp":null}}}`},
		{"modified", WatchEvent{Type: Modified, Object: json.RawMessage(`{"kind":"Flunder"}`)}, `{"type":"MODIFIED","object":{"kind":"Flunder"}}`},
		{"deleted", WatchEvent{Type: Deleted, Object: json.RawMessage(`{}`)}, `{"type":"DELETED","object":{}}`},
		{"bookmark", WatchEvent{Type: Bookmark, Object: json.RawMessage(`{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1","metadata":{"resourceVersion":"12","creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}}}`)},
			`{"type":"BOOKMARK","object":{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1","metadata":{"resourceVersion":"12","creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}}}}`},
		{"error", WatchEvent{Type: Error, Object: json.RawMessage(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}`)},
			`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}`},
		{"no object", WatchEvent{Type: Added}, `{"type":"ADDED","object":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkJSON(t, tt.ev, tt.want) })
	}
	if InitialEventsAnnotation != "k8s.io/initial-events-end" {
		t.Errorf("InitialEventsAnnotation = %q", InitialEventsAnnotation)
	}
}

func TestWatchEventCarriesStatus(t *testing.T) {
	b, err := json.Marshal(NewResourceExpired("too old resource version: 1 (5)").ErrStatus)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := json.Marshal(WatchEvent{Type: Error, Object: b})
	const want = `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}`
	if string(ev) != want {
		t.Errorf("got  %s\nwant %s", ev, want)
	}
}
