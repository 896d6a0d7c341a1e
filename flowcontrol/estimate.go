package flowcontrol

import (
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/apikit-dev/apikit/request"
)

// WorkEstimate is what a request is expected to cost, in seats: the
// concurrency units a priority level shares out.
type WorkEstimate struct {
	// InitialSeats are held while the request executes.
	InitialSeats int
	// FinalSeats are held for AdditionalLatency after it finishes: the
	// work a write causes by fanning out to watchers.
	FinalSeats        int
	AdditionalLatency time.Duration
}

// MaxSeats is the most seats the request holds at once.
func (w WorkEstimate) MaxSeats() int { return max(w.InitialSeats, w.FinalSeats, 1) }

// EstimatorConfig tunes work estimation. The zero value is Kubernetes'
// defaults (see the field docs).
type EstimatorConfig struct {
	// ObjectsPerSeat is how many objects a list may return per seat
	// (default 100).
	ObjectsPerSeat float64
	// MaximumSeats caps one request's seats (default 10); a level's own
	// cap is also never more than its nominal concurrency limit.
	MaximumSeats int
	// WatchesPerSeat is how many watchers a write's event reaches per
	// final seat (default 10).
	WatchesPerSeat float64
	// EventAdditionalDuration is how long a final seat is held
	// (default 5ms).
	EventAdditionalDuration time.Duration
}

func (c EstimatorConfig) withDefaults() EstimatorConfig {
	if c.ObjectsPerSeat <= 0 {
		c.ObjectsPerSeat = 100
	}
	if c.MaximumSeats <= 0 {
		c.MaximumSeats = 10
	}
	if c.WatchesPerSeat <= 0 {
		c.WatchesPerSeat = 10
	}
	if c.EventAdditionalDuration <= 0 {
		c.EventAdditionalDuration = 5 * time.Millisecond
	}
	return c
}

// estimate returns the work of a request: a list or a watch that sends
// its initial events costs a seat per ObjectsPerSeat objects it will
// return (learnt from the object counts); a write costs, besides its
// seat, a final seat per WatchesPerSeat watchers of its resource for a
// short time; everything else costs one seat. maxSeats is the level's cap.
func (c *EstimatorConfig) estimate(info *request.Info, query string, src workSource, maxSeats int) WorkEstimate {
	one := WorkEstimate{InitialSeats: 1}
	if info == nil || !info.IsResourceRequest {
		return one
	}
	switch info.Verb {
	case "list", "watch":
		var q url.Values
		if query != "" {
			var err error
			if q, err = url.ParseQuery(query); err != nil {
				return one // the handler refuses it
			}
		}
		if info.Verb == "watch" && !watchSendsInitialEvents(q) {
			return one
		}
		n, ok := src.objectCount(info)
		if !ok {
			// Unknown: a resource of another server behind a proxy, or one
			// not counted yet. Kubernetes too assumes the cheap case.
			return one
		}
		switch {
		case info.Name != "":
			n = 1 // a fieldSelector on metadata.name
		case info.Verb == "list" && q.Get("labelSelector") == "" && q.Get("fieldSelector") == "":
			// A selector scans everything; a plain limit stops early.
			if limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64); limit > 0 && limit < n {
				n = limit
			}
		}
		seats := int(math.Ceil(float64(n) / c.ObjectsPerSeat))
		return WorkEstimate{InitialSeats: min(max(seats, 1), maxSeats)}
	case "create", "update", "patch", "delete", "deletecollection":
		w := src.interestedWatches(info)
		if float64(w) < c.WatchesPerSeat {
			return one
		}
		final := int(math.Ceil(float64(w) / c.WatchesPerSeat))
		// The fan-out's work, final seats times the event duration, is
		// reshaped into a narrower and longer rectangle past the cap.
		work := float64(final) * c.EventAdditionalDuration.Seconds()
		final = min(final, maxSeats)
		return WorkEstimate{InitialSeats: 1, FinalSeats: final,
			AdditionalLatency: time.Duration(work / float64(final) * float64(time.Second))}
	}
	return one
}

// workSource tells the estimator what it cannot see in the request.
type workSource interface {
	// objectCount is the number of objects of the request's resource.
	objectCount(info *request.Info) (int64, bool)
	// interestedWatches is the number of watches a write's event reaches.
	interestedWatches(info *request.Info) int
}

// watchSendsInitialEvents reports whether a watch starts with the current
// state: an explicit sendInitialEvents=true, or the legacy watch from
// resourceVersion "" or "0" without sendInitialEvents=false.
func watchSendsInitialEvents(q url.Values) bool {
	if v, ok := q["sendInitialEvents"]; ok && len(v) > 0 {
		b, _ := strconv.ParseBool(v[0])
		return b
	}
	rv := q.Get("resourceVersion")
	return rv == "" || rv == "0"
}
