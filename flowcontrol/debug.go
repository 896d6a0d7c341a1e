package flowcontrol

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"
)

// DebugPathPrefix is where kube-apiserver serves its priority-and-fairness
// dumps; the server authorizes them as any non-resource path (get on
// /debug/api_priority_and_fairness/...), so only those granted debug
// paths, system:masters among them, may read them.
const DebugPathPrefix = "/debug/api_priority_and_fairness/"

// DebugHandler serves the dumps kube-apiserver serves under
// DebugPathPrefix, as tab-aligned text:
//
//   - dump_priority_levels: each level's requests and seats, its nominal
//     and current concurrency limits and its counters;
//   - dump_queues: each queue of each level;
//   - dump_requests: each waiting and executing request.
func (a *APF) DebugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var dump func(io.Writer)
		switch strings.TrimPrefix(r.URL.Path, DebugPathPrefix) {
		case "dump_priority_levels":
			dump = a.dumpPriorityLevels
		case "dump_queues":
			dump = a.dumpQueues
		case "dump_requests":
			dump = a.dumpRequests
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		tw := tabwriter.NewWriter(w, 8, 0, 1, ' ', 0)
		dump(tw)
		_ = tw.Flush()
	})
}

// levels returns the current levels with their current limits, read under
// the lock the borrowing adjustment writes them under.
func (a *APF) snapshotLevels() []levelSnapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.state.Load()
	out := make([]levelSnapshot, len(st.levels))
	for i, l := range st.levels {
		out[i] = levelSnapshot{l, l.nominalCL, l.currentCL}
	}
	return out
}

type levelSnapshot struct {
	*priorityLevel
	nominalCL, currentCL int
}

func (a *APF) dumpPriorityLevels(w io.Writer) {
	fmt.Fprintln(w, "PriorityLevelName,\tActiveQueues,\tIsIdle,\tIsQuiescing,\tWaitingRequests,\tExecutingRequests,\tSeatsInUse,\tNominalCL,\tCurrentCL,\tDispatchedRequests,\tRejectedRequests,\tTimedoutRequests,\tCancelledRequests")
	for _, l := range a.snapshotLevels() {
		qs := l.qs
		qs.mu.Lock()
		active := 0
		for _, q := range qs.queues {
			if q.length > 0 || q.requestsExecuting > 0 {
				active++
			}
		}
		idle := qs.requestsWaiting == 0 && qs.requestsExecuting == 0
		fmt.Fprintf(w, "%s,\t%d,\t%t,\t%t,\t%d,\t%d,\t%d,\t%d,\t%d,\t%d,\t%d,\t%d,\t%d\n", l.name, active, idle, false,
			qs.requestsWaiting, qs.requestsExecuting, qs.seatsInUse, l.nominalCL, l.currentCL,
			qs.dispatched, qs.rejected, qs.timedOut, qs.cancelled)
		qs.mu.Unlock()
	}
}

func (a *APF) dumpQueues(w io.Writer) {
	fmt.Fprintln(w, "PriorityLevelName,\tIndex,\tPendingRequests,\tExecutingRequests,\tSeatsInUse,\tNextDispatchR,\tInitialSeatsSum,\tMaxSeatsSum,\tTotalWorkSum")
	for _, l := range a.snapshotLevels() {
		qs := l.qs
		qs.mu.Lock()
		for _, q := range qs.queues {
			initial, maxSeats, work := 0, 0, 0.0
			for r := q.head; r != nil; r = r.next {
				initial += r.work.InitialSeats
				maxSeats += r.work.MaxSeats()
				work += r.totalWork()
			}
			fmt.Fprintf(w, "%s,\t%d,\t%d,\t%d,\t%d,\t%.8fss,\t%d,\t%d,\t%.8fss\n", l.name, q.index, q.length,
				q.requestsExecuting, q.seatsInUse, q.nextDispatchR, initial, maxSeats, work)
		}
		qs.mu.Unlock()
	}
}

func (a *APF) dumpRequests(w io.Writer) {
	fmt.Fprintln(w, "PriorityLevelName,\tFlowSchemaName,\tQueueIndex,\tRequestIndexInQueue,\tFlowDistingsher,\tArriveTime,\tInitialSeats,\tFinalSeats,\tAdditionalLatency")
	for _, l := range a.snapshotLevels() {
		qs := l.qs
		qs.mu.Lock()
		for _, q := range qs.queues {
			i := 0
			for r := q.head; r != nil; r = r.next {
				fmt.Fprintf(w, "%s,\t%s,\t%d,\t%d,\t%s,\t%s,\t%d,\t%d,\t%s\n", l.name, r.schema, q.index, i, r.distinguisher,
					r.arrival.UTC().Format(time.RFC3339Nano), r.work.InitialSeats, r.work.FinalSeats, r.work.AdditionalLatency)
				i++
			}
		}
		qs.mu.Unlock()
	}
}
