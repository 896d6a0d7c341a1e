package filters

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"sigs.k8s.io/yaml"

	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/request"
)

// AuditIDHeader carries a request's audit ID: a client may send one (to
// correlate its own logs), and every audited response has one.
const AuditIDHeader = "Audit-ID"

// WithAudit records the requests that reach it (authenticated ones: it
// sits after authentication) as audit Events, handed to sink when the
// request is received (stage RequestReceived, before any handler runs) and
// when the response is complete; a long-running request (a watch) is also
// recorded when its response starts, and a request whose handler panics
// with stage Panic. policy gives each request its level and the stages to leave out,
// as kube-apiserver's --audit-policy-file does: None records nothing,
// Metadata who asked what and the answer's code, Request also the request's
// body (JSON; YAML converted), RequestResponse also the response's (not of
// long-running requests). When sink is an audit.StrictSink
// (blocking-strict mode), a request whose RequestReceived event it cannot
// store is answered 500 and not served. A nil policy records every request at Metadata;
// a nil sink turns auditing off and costs nothing.
func WithAudit(h http.Handler, sink audit.Sink, policy audit.PolicyChecker, longRunning func(*request.Info) bool) http.Handler {
	if sink == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reached, ok := r.Context().Value(auditReachedKey{}).(*bool); ok {
			*reached = true
		}
		info, _ := request.InfoFrom(r.Context())
		level, omit := levelOf(policy, r, info)
		m := metrics.From(r.Context())
		m.ObserveAuditLevel(level)
		if level == audit.LevelNone {
			h.ServeHTTP(w, r)
			return
		}
		ev := newEvent(r)
		ev.Level = level
		rec := audit.NewRecorder(ev)
		w.Header().Set(AuditIDHeader, ev.AuditID)
		log := func(stage string, code int) {
			if !slices.Contains(omit, stage) {
				e := finish(rec, stage, code)
				m.ObserveAuditEvent()
				sink.Log(e)
			}
		}
		if strict, ok := sink.(audit.StrictSink); ok && !slices.Contains(omit, audit.StageRequestReceived) {
			// blocking-strict: a request that cannot be audited is not
			// served, answered as kube-apiserver answers it (plain text).
			m.ObserveAuditEvent()
			if err := strict.Store(finish(rec, audit.StageRequestReceived, 0)); err != nil {
				m.ObserveAuditRejection()
				http.Error(w, fmt.Sprintf("Internal Server Error: %q: failed to store audit event", r.URL.RequestURI()), http.StatusInternalServerError)
				return
			}
		} else {
			log(audit.StageRequestReceived, 0)
		}
		aw := &auditWriter{ResponseWriter: w}
		longRun := info != nil && longRunning != nil && longRunning(info)
		if longRun {
			aw.started = func(code int) { log(audit.StageResponseStarted, code) }
		} else if level == audit.LevelRequestResponse {
			aw.capture = &limitedBuffer{limit: maxAuditedBody}
		}
		var body *limitedBuffer
		if (level == audit.LevelRequest || level == audit.LevelRequestResponse) && r.Body != nil && r.Body != http.NoBody {
			body = &limitedBuffer{limit: maxAuditedBody}
			r.Body = teeBody{Reader: io.TeeReader(r.Body, body), Closer: r.Body}
		}
		completed := false
		defer func() {
			if completed {
				return
			}
			// The handler panicked: record it, and let the panic go on
			// to the recovery filter.
			log(audit.StagePanic, http.StatusInternalServerError)
		}()
		h.ServeHTTP(aw, r.WithContext(audit.WithRecorder(r.Context(), rec)))
		completed = true
		if body != nil || aw.capture != nil {
			rec.Update(func(ev *audit.Event) {
				if body != nil {
					ev.RequestObject = auditedObject(body, r.Header.Get("Content-Type"))
				}
				if aw.capture != nil {
					ev.ResponseObject = auditedResponse(aw.capture, aw.Header())
				}
			})
		}
		log(audit.StageResponseComplete, aw.code())
	})
}

// maxAuditedBody bounds the request or response body an Event holds: a
// larger one (a big LIST at RequestResponse) is left out of the Event.
const maxAuditedBody = 4 << 20

// levelOf is the audit level of a request, with the stages to omit.
func levelOf(policy audit.PolicyChecker, r *http.Request, info *request.Info) (string, []string) {
	if policy == nil {
		return audit.LevelMetadata, nil
	}
	a := audit.Attributes{Verb: strings.ToLower(r.Method), Path: r.URL.Path}
	if u, ok := authn.UserFrom(r.Context()); ok {
		a.User, a.Groups = u.Name, u.Groups
	}
	if info != nil {
		a.Verb, a.IsResourceRequest = info.Verb, info.IsResourceRequest
		a.APIGroup, a.Resource, a.Subresource = info.APIGroup, info.Resource, info.Subresource
		a.Namespace, a.Name = info.Namespace, info.Name
	}
	return policy.LevelOf(a)
}

// auditedObject is a captured body as an Event holds it: JSON as it came,
// YAML as JSON, nothing for other forms (protobuf) or a body over the limit.
// auditedResponse is auditedObject for a response body, which may be
// gzip-compressed (respond.Compress): the Event holds what it decompresses
// to, if that is within maxAuditedBody.
func auditedResponse(b *limitedBuffer, h http.Header) json.RawMessage {
	if h.Get("Content-Encoding") != "gzip" || b.overflow || b.buf.Len() == 0 {
		return auditedObject(b, h.Get("Content-Type"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(b.buf.Bytes()))
	if err != nil {
		return nil
	}
	plain := &limitedBuffer{limit: maxAuditedBody}
	if _, err := io.Copy(plain, io.LimitReader(zr, maxAuditedBody+1)); err != nil {
		return nil
	}
	return auditedObject(plain, h.Get("Content-Type"))
}

func auditedObject(b *limitedBuffer, contentType string) json.RawMessage {
	if b.overflow || b.buf.Len() == 0 {
		return nil
	}
	data := b.buf.Bytes()
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/yaml", "application/x-yaml", "text/yaml":
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil
		}
		data = j
	case "application/vnd.kubernetes.protobuf":
		return nil
	}
	if !json.Valid(data) {
		return nil
	}
	return json.RawMessage(bytes.Clone(data))
}

// limitedBuffer keeps what is written to it up to limit bytes, and notes
// that more came.
type limitedBuffer struct {
	buf      bytes.Buffer
	limit    int
	overflow bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.overflow || b.buf.Len()+len(p) > b.limit {
		b.overflow = true
		b.buf = bytes.Buffer{}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// teeBody is a request body that copies what the handler reads.
type teeBody struct {
	io.Reader
	io.Closer
}

// WithFailedAuthenticationAudit records the requests that authentication
// refuses, which never reach WithAudit: it goes before authentication and
// logs an Event at stage ResponseStarted with code 401 and no user, as
// kube-apiserver's filter of the same name does, for each request that
// was answered 401 without reaching WithAudit, unless policy gives such a
// request the level None or omits the stage. A nil sink turns it off.
func WithFailedAuthenticationAudit(h http.Handler, sink audit.Sink, policy audit.PolicyChecker) http.Handler {
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
		info, _ := request.InfoFrom(r.Context())
		level, omit := levelOf(policy, r, info)
		if level == audit.LevelNone || slices.Contains(omit, audit.StageResponseStarted) {
			return
		}
		ev := newEvent(r)
		ev.Level = audit.LevelMetadata // the request was not read
		ev.Stage = audit.StageResponseStarted
		ev.StageTimestamp = audit.MicroTime(time.Now())
		ev.ResponseStatus = &audit.ResponseStatus{Code: http.StatusUnauthorized}
		metrics.From(r.Context()).ObserveAuditEvent()
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

// finish stamps a copy of the recorded event with its stage and, once
// there is a response, its code.
func finish(rec *audit.Recorder, stage string, code int) *audit.Event {
	ev := rec.Snapshot()
	ev.Stage = stage
	ev.StageTimestamp = audit.MicroTime(time.Now())
	if stage != audit.StageRequestReceived {
		ev.ResponseStatus = &audit.ResponseStatus{Code: int32(code)}
	}
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
	// capture, when set, keeps the response body (RequestResponse).
	capture *limitedBuffer
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
	if a.capture != nil {
		_, _ = a.capture.Write(b)
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
