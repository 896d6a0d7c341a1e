// Package tracing gives an apikit server OpenTelemetry traces as
// kube-apiserver has them: kube's TracingConfiguration file (the OTLP gRPC
// endpoint and samplingRatePerMillion), a TracerProvider exporting over
// OTLP, and the helpers the server's code uses to open spans.
//
// Spans are opened from the span already in a request's context (Start),
// the way k8s.io/component-base/tracing does: the server's tracing filter
// puts the request's span there, and storage, webhook and proxy code below
// it opens child spans without being handed a provider. A request that is
// not sampled costs one context lookup per would-be span.
package tracing
