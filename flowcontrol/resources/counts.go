package resources

import (
	"context"
	"log/slog"
	"time"

	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// DefaultCountPeriod is how often TrackObjectCounts counts. A count costs a
// one-item list: nothing from a watch cache, a range count from etcd.
const DefaultCountPeriod = 5 * time.Second

// TrackObjectCounts counts the objects of every resource resources returns
// that is a registry.Counter, at once and then every period, and gives the
// counts to apf for its list estimates, until ctx ends.
func TrackObjectCounts(ctx context.Context, apf *flowcontrol.APF, resources func() []registry.Resource, period time.Duration, log *slog.Logger) {
	if period <= 0 {
		period = DefaultCountPeriod
	}
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		registry.CountEach(resources(), func(c registry.Counter) (int64, error) { return c.Count(ctx) },
			func(gr meta.GroupResource, n int64, err error) {
				if err != nil {
					if ctx.Err() == nil {
						log.Debug("priority and fairness: counting objects", "resource", gr, "err", err)
					}
					return
				}
				apf.SetObjectCount(gr, n)
			})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
