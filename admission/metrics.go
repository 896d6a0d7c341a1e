package admission

import (
	"context"
	"reflect"
	"time"

	"github.com/apikit-dev/apikit/metrics"
)

// Named is implemented by plugins that have a name, which
// apiserver_admission_controller_admission_duration_seconds labels them
// with; a plugin without one is labelled with its Go type.
type Named interface {
	Name() string
}

// pluginName is p's name for the metrics: a bounded set, the server's own
// plugins.
func pluginName(p Plugin) string {
	if n, ok := p.(Named); ok {
		return n.Name()
	}
	return reflect.TypeOf(p).String()
}

// observeStep records a phase of admission (the whole chain's admit or
// validate) that started at start and ended with *err, under the
// metrics of the server the request of ctx is in.
func observeStep(ctx context.Context, step string, a *Attributes, start time.Time, err *error) {
	metrics.From(ctx).ObserveAdmissionStep(step, string(a.Operation), *err != nil, time.Since(start))
}

// observed runs one plugin's admit or validate and records its latency.
func observed(ctx context.Context, p Plugin, step string, a *Attributes, run func() error) error {
	m := metrics.From(ctx)
	if m == nil {
		return run()
	}
	start := time.Now()
	err := run()
	m.ObserveAdmissionController(pluginName(p), step, string(a.Operation), err != nil, time.Since(start))
	return err
}
