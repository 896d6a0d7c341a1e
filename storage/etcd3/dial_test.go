package etcd3

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/stats"
)

// countingHandler counts the calls a stats.Handler gets and marks the
// contexts it tags, as otelgrpc's handler does with its own value.
type countingHandler struct{ tags, handles int }

type taggedKey struct{}

func (c *countingHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	c.tags++
	return context.WithValue(ctx, taggedKey{}, true)
}

func (c *countingHandler) HandleRPC(ctx context.Context, _ stats.RPCStats) {
	if ctx.Value(taggedKey{}) == nil {
		panic("HandleRPC with a context TagRPC did not return")
	}
	c.handles++
}

func (*countingHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (*countingHandler) HandleConn(context.Context, stats.ConnStats) {}

// TestTracedOnly: an etcd call reaches otelgrpc's handler when its context
// carries a trace context, sampled or not, and skips it otherwise.
func TestTracedOnly(t *testing.T) {
	sc := func(flags trace.TraceFlags) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID{1},
			SpanID:     trace.SpanID{2},
			TraceFlags: flags,
		})
	}
	tests := []struct {
		name   string
		ctx    context.Context
		handed bool
	}{
		{"no trace", context.Background(), false},
		{"sampled", trace.ContextWithSpanContext(context.Background(), sc(trace.FlagsSampled)), true},
		{"not sampled", trace.ContextWithRemoteSpanContext(context.Background(), sc(0)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := &countingHandler{}
			h := tracedOnly{inner}
			ctx := h.TagRPC(tt.ctx, &stats.RPCTagInfo{FullMethodName: "/etcdserverpb.KV/Range"})
			h.HandleRPC(ctx, &stats.Begin{Client: true})
			h.HandleRPC(ctx, &stats.End{Client: true})
			want := 0
			if tt.handed {
				want = 1
			}
			if inner.tags != want || inner.handles != 2*want {
				t.Errorf("inner handler got %d tags and %d stats, want %d and %d", inner.tags, inner.handles, want, 2*want)
			}
			if !tt.handed && ctx != tt.ctx {
				t.Error("an untraced call's context was changed")
			}
		})
	}
}
