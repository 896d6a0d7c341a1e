package request

import "context"

type watchInitKey struct{}

// WithWatchInitSignal returns a context carrying signal, which a watch
// handler calls (see SignalWatchInit) once it has sent its initial events.
// Flow control uses it to give back a watch's seats then rather than when
// the watch ends: a watch costs the server while it initialises, little
// after. signal must be safe to call more than once.
func WithWatchInitSignal(ctx context.Context, signal func()) context.Context {
	return context.WithValue(ctx, watchInitKey{}, signal)
}

// SignalWatchInit tells whoever put a signal in ctx that the watch has
// sent its initial events (or has none to send). It does nothing when
// there is no signal.
func SignalWatchInit(ctx context.Context) {
	if f, ok := ctx.Value(watchInitKey{}).(func()); ok && f != nil {
		f()
	}
}
