package etcd3

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/stats"

	"github.com/apikit-dev/apikit/internal/race"
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

// TestTracedOnlyAllocations: an untraced etcd call costs the stats handler
// no allocation (otelgrpc's handler alone makes 16).
func TestTracedOnlyAllocations(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates on its own")
	}
	h := traceDialHandler()
	info := &stats.RPCTagInfo{FullMethodName: "/etcdserverpb.KV/Range"}
	end := &stats.End{Client: true}
	if n := testing.AllocsPerRun(100, func() {
		h.HandleRPC(h.TagRPC(context.Background(), info), end)
	}); n != 0 {
		t.Errorf("%v allocations per untraced call, want 0", n)
	}
}

// BenchmarkStatsHandler measures what the etcd client's stats handler costs
// an untraced call (a TagRPC and the stats of a unary call), such as each
// shared quorum read of the revision behind consistent GETs: otelgrpc's
// handler alone against it behind tracedOnly.
func BenchmarkStatsHandler(b *testing.B) {
	otel := traceDialHandler()
	for _, bc := range []struct {
		name string
		h    stats.Handler
	}{
		{"otelgrpc", otel.(tracedOnly).h},
		{"tracedOnly", otel},
	} {
		b.Run(bc.name, func(b *testing.B) {
			info := &stats.RPCTagInfo{FullMethodName: "/etcdserverpb.KV/Range"}
			// A unary call's stats, made once: gRPC makes its own.
			calls := []stats.RPCStats{&stats.Begin{Client: true}, &stats.OutPayload{Client: true},
				&stats.InPayload{Client: true}, &stats.End{Client: true}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				c := bc.h.TagRPC(ctx, info)
				for _, rs := range calls {
					bc.h.HandleRPC(c, rs)
				}
			}
		})
	}
}
