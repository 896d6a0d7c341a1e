package filters

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/tracing"
)

// WithTracing opens the request's span (kind server) with tp, named as
// kube-apiserver names it ("GET /apis/wardle.example.com/v1beta1/namespaces/{:namespace}/flunders/{:name}"),
// with the method, target, status code and audit ID. It sits right after
// authentication: the W3C trace context a client sends is the span's
// parent only when the client is system:masters or system:monitoring, as
// kube-apiserver allows; anyone else's becomes a link of a new trace, so
// an unprivileged client can neither force sampling nor graft spans onto
// another trace. The handlers below open their spans (storage, webhooks,
// proxy) from the context with tracing.Start. A request the sampler drops
// is served without the span in its context: nothing below records, and
// no trace context is passed on for it.
func WithTracing(h http.Handler, tp trace.TracerProvider) http.Handler {
	if tp == nil {
		return h
	}
	tracer := tp.Tracer("github.com/apikit-dev/apikit/server")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
		if _, sent := r.Header["Traceparent"]; sent {
			ctx = tracing.Propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
			if remote := trace.SpanContextFromContext(ctx); remote.IsValid() && !mayJoinTrace(r) {
				opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: remote}))
			}
		}
		// The sampler decides in Start; the name and attributes are only
		// worked out for a span that records, so that an unsampled request
		// costs one span and nothing more.
		ctx, span := tracer.Start(ctx, "KubernetesAPI", opts...)
		if !span.IsRecording() {
			span.End()
			h.ServeHTTP(w, r)
			return
		}
		defer span.End()
		span.SetName(spanName(r))
		span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.target", r.URL.RequestURI()))
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r.WithContext(ctx))
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		span.SetAttributes(attribute.Int("http.response.status_code", status),
			attribute.String("audit-id", w.Header().Get(AuditIDHeader)))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	})
}

// mayJoinTrace reports whether r's user may continue a trace of its own:
// kube-apiserver trusts the trace context of system:masters and
// system:monitoring only.
func mayJoinTrace(r *http.Request) bool {
	u, ok := authn.UserFrom(r.Context())
	return ok && (u.InGroup(authn.SystemPrivilegedGroup) || u.InGroup("system:monitoring"))
}

// spanName is kube-apiserver's: the method and the path with namespace
// and name replaced, so names are bounded.
func spanName(r *http.Request) string {
	info, ok := request.InfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		return r.Method
	}
	name := "/" + info.APIPrefix
	if info.APIGroup != "" {
		name += "/" + info.APIGroup
	}
	name += "/" + info.APIVersion
	if info.Namespace != "" {
		name += "/namespaces/{:namespace}"
	}
	name += "/" + info.Resource
	if info.Name != "" {
		name += "/{:name}"
	}
	if info.Subresource != "" {
		name += "/" + info.Subresource
	}
	return r.Method + " " + name
}
