package filters

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/request"
)

// AuditIDHeader carries a request's audit ID: a client may send one (to
// correlate its own logs), and every audited response has one.
const AuditIDHeader = "Audit-ID"

// WithAudit records every request that reaches it (authenticated ones: it
// sits after authentication) as an audit Event at the Metadata level and
// hands it to sink when the response is complete; a long-running request
// (a watch) is also recorded when its response starts, and a request whose
// handler panics with stage Panic. A nil sink turns auditing off and costs
// nothing.
func WithAudit(h http.Handler, sink audit.Sink, longRunning func(*request.Info) bool) http.Handler {
	if sink == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := audit.NewRecorder(newEvent(r))
		id := rec.Snapshot().AuditID
		w.Header().Set(AuditIDHeader, id)
		info, _ := request.InfoFrom(r.Context())
		aw := &auditWriter{ResponseWriter: w}
		if info != nil && longRunning != nil && longRunning(info) {
			aw.started = func(code int) { sink.Log(finish(rec, audit.StageResponseStarted, code)) }
		}
		completed := false
		defer func() {
			if completed {
				return
			}
			// The handler panicked: record it, and let the panic go on
			// to the recovery filter.
			sink.Log(finish(rec, audit.StagePanic, http.StatusInternalServerError))
		}()
		if reached, ok := r.Context().Value(auditReachedKey{}).(*bool); ok {
			*reached = true
		}
		h.ServeHTTP(aw, r.WithContext(audit.WithRecorder(r.Context(), rec)))
		completed = true
		sink.Log(finish(rec, audit.StageResponseComplete, aw.code()))
	})
}

// WithFailedAuthenticationAudit records the requests that authentication
// refuses, which never reach WithAudit: it goes before authentication and
// logs an Event at stage ResponseStarted with code 401 and no user, as
// kube-apiserver's filter of the same name does, for each request that
// was answered 401 without reaching WithAudit. A nil sink turns it off.
func WithFailedAuthenticationAudit(h http.Handler, sink audit.Sink) http.Handler {
	if sink == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached := false
		aw := &auditWriter{ResponseWriter: w}
		h.ServeHTTP(aw, r.WithContext(context.WithValue(r.Context(), auditReachedKey{}, &reached)))
		if reached || aw.code() != http.StatusUnauthorized {
			return
		}
		ev := newEvent(r)
		ev.Stage = audit.StageResponseStarted
		ev.StageTimestamp = audit.MicroTime(time.Now())
		ev.ResponseStatus = &audit.ResponseStatus{Code: http.StatusUnauthorized}
		sink.Log(&ev)
	})
}

// auditReachedKey marks, in a request's context, a flag that WithAudit
// sets when the request reaches it.
type auditReachedKey struct{}

// newEvent starts the event of r.
func newEvent(r *http.Request) audit.Event {
	id := r.Header.Get(AuditIDHeader)
	if id == "" || len(id) > 64 {
		id = uuid.NewString()
	}
	ev := audit.Event{
		Kind: "Event", APIVersion: "audit.k8s.io/v1", Level: audit.LevelMetadata,
		AuditID:                  id,
		RequestURI:               r.URL.RequestURI(),
		Verb:                     strings.ToLower(r.Method),
		SourceIPs:                sourceIPs(r),
		UserAgent:                r.UserAgent(),
		RequestReceivedTimestamp: audit.MicroTime(time.Now()),
	}
	if u, ok := authn.UserFrom(r.Context()); ok {
		ev.User = audit.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	}
	if info, ok := request.InfoFrom(r.Context()); ok {
		ev.Verb = info.Verb
		if info.IsResourceRequest {
			ev.ObjectRef = &audit.ObjectReference{
				Resource: info.Resource, Namespace: info.Namespace, Name: info.Name,
				APIGroup: info.APIGroup, APIVersion: info.APIVersion, Subresource: info.Subresource,
			}
		}
	}
	return ev
}

// finish stamps a copy of the recorded event with its stage and code.
func finish(rec *audit.Recorder, stage string, code int) *audit.Event {
	ev := rec.Snapshot()
	ev.Stage = stage
	ev.StageTimestamp = audit.MicroTime(time.Now())
	ev.ResponseStatus = &audit.ResponseStatus{Code: int32(code)}
	return &ev
}

// sourceIPs lists where the request came from as kube-apiserver does: the
// X-Forwarded-For chain and X-Real-Ip (as the client states them), then
// the connection's peer, without repeats.
func sourceIPs(r *http.Request) []string {
	var ips []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if ip := net.ParseIP(s); ip != nil {
			s = ip.String()
			for _, x := range ips {
				if x == s {
					return
				}
			}
			ips = append(ips, s)
		}
	}
	for _, v := range r.Header.Values("X-Forwarded-For") {
		for _, part := range strings.Split(v, ",") {
			add(part)
		}
	}
	add(r.Header.Get("X-Real-Ip"))
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	add(host)
	return ips
}

// auditWriter notes the response code (and, for long-running requests,
// when the response starts).
type auditWriter struct {
	http.ResponseWriter
	status  int
	started func(code int)
}

func (a *auditWriter) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
		if a.started != nil {
			a.started(code)
		}
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *auditWriter) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.WriteHeader(http.StatusOK)
	}
	return a.ResponseWriter.Write(b)
}

// Flush passes flushes through, so that watches stream.
func (a *auditWriter) Flush() {
	if a.status == 0 {
		a.WriteHeader(http.StatusOK)
	}
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (a *auditWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

func (a *auditWriter) code() int {
	if a.status == 0 {
		return http.StatusOK
	}
	return a.status
}
