// Package audit records what an API server was asked and what it answered,
// as audit.k8s.io/v1 Events: who asked (and whom they impersonated), from
// where, which verb on which object, the response code and when, and, at
// the Request and RequestResponse levels of a Policy (--audit-policy-file),
// the request's and response's bodies. Never credentials: they travel in
// headers, which no Event holds.
//
// The server's audit filter (server/filters.WithAudit) starts an Event for
// every authenticated request the policy does not give the level None, and
// puts it in the request's context; filters after it add to it (the
// impersonation filter records the impersonated user), and when the
// response is complete the filter hands the Event to a Sink, such as the
// JSON-lines log file of --audit-log-path.
package audit

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"time"
)

// Levels and stages, as audit.k8s.io names them (the other levels are in
// policy.go).
const (
	// LevelMetadata records who asked what, and the answer's code.
	LevelMetadata = "Metadata"

	// StageRequestReceived is recorded as soon as the audit filter has the
	// request, before any handler runs: an event without a response.
	StageRequestReceived  = "RequestReceived"
	StageResponseStarted  = "ResponseStarted"
	StageResponseComplete = "ResponseComplete"
	StagePanic            = "Panic"
)

// Event is an audit.k8s.io/v1 Event.
type Event struct {
	Kind       string   `json:"kind"`
	APIVersion string   `json:"apiVersion"`
	Level      string   `json:"level"`
	AuditID    string   `json:"auditID"`
	Stage      string   `json:"stage"`
	RequestURI string   `json:"requestURI"`
	Verb       string   `json:"verb"`
	User       UserInfo `json:"user"`
	// ImpersonatedUser is who the user acted as, with Impersonate-*
	// headers.
	ImpersonatedUser         *UserInfo        `json:"impersonatedUser,omitempty"`
	SourceIPs                []string         `json:"sourceIPs,omitempty"`
	UserAgent                string           `json:"userAgent,omitempty"`
	ObjectRef                *ObjectReference `json:"objectRef,omitempty"`
	ResponseStatus           *ResponseStatus  `json:"responseStatus,omitempty"`
	RequestReceivedTimestamp MicroTime        `json:"requestReceivedTimestamp"`
	// RequestObject and ResponseObject are the bodies, as JSON, at the
	// Request and RequestResponse levels.
	RequestObject  json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject json.RawMessage   `json:"responseObject,omitempty"`
	StageTimestamp MicroTime         `json:"stageTimestamp"`
	Annotations    map[string]string `json:"annotations,omitempty"`
}

// UserInfo is a user as the audit log writes it
// (authentication.k8s.io/v1 UserInfo).
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// ObjectReference names what a resource request was about.
type ObjectReference struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// ResponseStatus is the response's code, written as the metav1.Status an
// audit Event holds.
type ResponseStatus struct {
	Metadata struct{} `json:"metadata"`
	Code     int32    `json:"code"`
}

// MicroTime is a timestamp with microseconds, as Kubernetes writes
// metav1.MicroTime.
type MicroTime time.Time

// MarshalJSON writes RFC 3339 with six fractional digits, in UTC.
func (t MicroTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format("2006-01-02T15:04:05.000000Z07:00") + `"`), nil
}

// UnmarshalJSON reads what MarshalJSON writes (any RFC 3339 time).
func (t *MicroTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = MicroTime(v)
	return nil
}

// Sink receives finished events. Log must be safe for concurrent use and
// must not keep ev after it returns.
type Sink interface {
	Log(ev *Event)
}

// Recorder holds the event of one request while it is served.
type Recorder struct {
	mu sync.Mutex
	ev Event
}

// NewRecorder starts recording ev.
func NewRecorder(ev Event) *Recorder { return &Recorder{ev: ev} }

// Snapshot returns a copy of the event so far.
func (r *Recorder) Snapshot() Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.ev
	ev.Annotations = maps.Clone(ev.Annotations)
	return ev
}

// Update changes the event under the recorder's lock.
func (r *Recorder) Update(f func(ev *Event)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.ev)
}

type recorderKey struct{}

// WithRecorder returns a context carrying r.
func WithRecorder(ctx context.Context, r *Recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, r)
}

// RecorderFrom returns the request's recorder, nil when auditing is off.
func RecorderFrom(ctx context.Context) *Recorder {
	r, _ := ctx.Value(recorderKey{}).(*Recorder)
	return r
}

// LogImpersonatedUser records whom the request's user impersonates.
func LogImpersonatedUser(ctx context.Context, u UserInfo) {
	if r := RecorderFrom(ctx); r != nil {
		r.Update(func(ev *Event) { ev.ImpersonatedUser = &u })
	}
}

// AddAnnotation records a key and value about the request (an
// authorizer's decision, say); an existing key keeps its value.
func AddAnnotation(ctx context.Context, key, value string) {
	if r := RecorderFrom(ctx); r != nil {
		r.Update(func(ev *Event) {
			if ev.Annotations == nil {
				ev.Annotations = map[string]string{}
			}
			if _, ok := ev.Annotations[key]; !ok {
				ev.Annotations[key] = value
			}
		})
	}
}
