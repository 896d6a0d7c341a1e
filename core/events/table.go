package events

import (
	"cmp"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/registry"
)

// nameDescription is ObjectMeta's name, as the NAME column of every
// kube-apiserver table describes it.
const nameDescription = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"

// columns are kube-apiserver's events table, which kubectl get events
// prints: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE (and more with -o wide).
// kube describes each column by the core/v1 field it comes from, and
// declares COUNT a string but fills it with an integer.
var columns = func() []registry.Column[*Event] {
	doc := Event{}.SwaggerDoc()
	return []registry.Column[*Event]{
		{Name: "Last Seen", Type: "string", Description: doc["lastTimestamp"], Value: func(e *Event) any { return lastSeen(e) }},
		{Name: "Type", Type: "string", Description: doc["type"], Value: func(e *Event) any { return e.Type }},
		{Name: "Reason", Type: "string", Description: doc["reason"], Value: func(e *Event) any { return e.Reason }},
		{Name: "Object", Type: "string", Description: doc["involvedObject"], Value: func(e *Event) any { return object(e) }},
		{Name: "Subobject", Type: "string", Priority: 1, Description: ObjectReference{}.SwaggerDoc()["fieldPath"],
			Value: func(e *Event) any { return e.InvolvedObject.FieldPath }},
		{Name: "Source", Type: "string", Priority: 1, Description: doc["source"], Value: func(e *Event) any { return source(e) }},
		{Name: "Message", Type: "string", Description: doc["message"], Value: func(e *Event) any { return strings.TrimSpace(e.Message) }},
		{Name: "First Seen", Type: "string", Priority: 1, Description: doc["firstTimestamp"], Value: func(e *Event) any { return firstSeen(e) }},
		{Name: "Count", Type: "string", Priority: 1, Description: doc["count"], Value: func(e *Event) any { return count(e) }},
		{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: nameDescription, Value: func(e *Event) any { return e.Name }},
	}
}()

func since(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return registry.HumanDuration(time.Since(t))
}

// firstSeen is when the event first happened: firstTimestamp, else (an
// events.k8s.io/v1 event) eventTime.
func firstSeen(e *Event) string {
	if e.FirstTimestamp.IsZero() {
		return since(e.EventTime.Time)
	}
	return since(e.FirstTimestamp.Time)
}

// lastSeen is when the event last happened, as kube's printer picks it: a
// series' last occurrence, else lastTimestamp, else the first one.
func lastSeen(e *Event) string {
	switch {
	case e.Series != nil:
		return since(e.Series.LastObservedTime.Time)
	case !e.LastTimestamp.IsZero():
		return since(e.LastTimestamp.Time)
	}
	return firstSeen(e)
}

// object is kind/name of what the event is about, or the kind alone for
// an event about no named object.
func object(e *Event) string {
	kind := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name == "" {
		return kind
	}
	return kind + "/" + e.InvolvedObject.Name
}

// source is the reporting component and host, each from the core/v1 field
// or else from its events.k8s.io/v1 counterpart (reportingController,
// reportingInstance).
func source(e *Event) string {
	component := cmp.Or(e.Source.Component, e.ReportingController)
	host := cmp.Or(e.Source.Host, e.ReportingInstance)
	if host == "" {
		return component
	}
	return component + ", " + host
}

// count is how often the event happened: a series' count, else count, and
// 1 for a singleton (which events.k8s.io/v1 leaves at 0).
func count(e *Event) int64 {
	switch {
	case e.Series != nil:
		return int64(e.Series.Count)
	case e.Count == 0:
		return 1
	}
	return int64(e.Count)
}
