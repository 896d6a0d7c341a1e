package history

import (
	"fmt"
	"strings"

	"github.com/apikit-dev/apikit/storage"
)

// readableLocked returns the revision a read at rev (0: the latest) is
// served at; ok is false when the history does not hold it.
func (h *History[V]) readableLocked(rev int64) (int64, bool) {
	switch {
	case !h.ready.Load():
		return 0, false
	case rev == 0:
		return h.seen, true
	case rev < h.floor || rev > h.seen:
		return 0, false
	}
	return rev, true
}

// List returns the values under prefix at rev (0: the latest), from the
// key start on, at most limit of them (0: all) that pred matches, with a
// continue token when there are more, and RemainingItemCount when pred is
// empty, as storage.Interface.List. ok is false when the history does not
// hold rev (or no state): the caller decides what that means.
func (h *History[V]) List(prefix, start string, rev, limit int64, pred storage.Predicate) (res storage.ListResult, ok bool, err error) {
	var full bool
	if pred.Empty() {
		res, full, ok = h.list(prefix, start, rev, limit)
	} else {
		res, full, ok, err = h.listFiltered(prefix, start, rev, limit, pred)
	}
	if !ok || err != nil || !full {
		return res, ok, err
	}
	if res.Continue, err = storage.EncodeContinue(res.Items[len(res.Items)-1].Key, prefix, res.Revision); err != nil {
		return storage.ListResult{}, true, fmt.Errorf("encoding continue token: %w", err)
	}
	return res, true, nil
}

// list serves an unfiltered list; full reports a page with more after it.
func (h *History[V]) list(prefix, start string, rev, limit int64) (res storage.ListResult, full, ok bool) {
	h.RLock()
	defer h.RUnlock()
	if rev, ok = h.readableLocked(rev); !ok {
		return res, false, false
	}
	res.Revision = rev
	switch {
	case limit > 0:
		res.Items = make([]storage.KeyValue, 0, min(limit, int64(h.live)))
	case prefix == h.cfg.Root && rev == h.seen:
		res.Items = make([]storage.KeyValue, 0, h.live)
	default:
		// Counting first costs a walk of the index; growing the slice
		// would cost twice its size in allocations, and the collector's
		// time with them.
		n := 0
		for rec := range h.index.From(start) {
			if !strings.HasPrefix(rec.key, prefix) {
				break
			}
			if rec.atVersion(rev) != nil {
				n++
			}
		}
		res.Items = make([]storage.KeyValue, 0, n)
	}
	var remaining int64
	for rec := range h.index.From(start) {
		if !strings.HasPrefix(rec.key, prefix) {
			break
		}
		ver := rec.atVersion(rev)
		switch {
		case ver == nil:
		case full:
			remaining++ // past a full page: count the rest
		case limit > 0 && int64(len(res.Items)) == limit:
			full, remaining = true, 1
		default:
			res.Items = append(res.Items, ver.val.KeyValue(rec.key, ver.rev))
		}
	}
	if full {
		res.RemainingItemCount = &remaining
	}
	return res, full, true
}

// listFiltered serves a filtered list. Values whose attributes are
// memoized are matched under the lock; the first match of another decodes
// it, which happens without the lock, and the walk goes on from there.
func (h *History[V]) listFiltered(prefix, start string, rev, limit int64, pred storage.Predicate) (res storage.ListResult, full, ok bool, err error) {
	if limit > 0 {
		res.Items = make([]storage.KeyValue, 0, min(limit, 1024))
	}
	key := start
	for {
		var undecided storage.KeyValue // a value to decode, or none
		h.RLock()
		if rev, ok = h.readableLocked(rev); !ok {
			h.RUnlock()
			return storage.ListResult{}, false, false, nil
		}
		for rec := range h.index.From(key) {
			if !strings.HasPrefix(rec.key, prefix) {
				break
			}
			v, vrev, ok := rec.at(rev)
			if !ok {
				continue
			}
			if limit > 0 && int64(len(res.Items)) == limit {
				full = true
				break
			}
			match, known := pred.MatchesMemoized(v.Memo())
			if !known {
				undecided = keyValue(rec.key, vrev, v)
				break
			}
			if match {
				res.Items = append(res.Items, keyValue(rec.key, vrev, v))
			}
		}
		h.RUnlock()
		if undecided.Key == "" {
			break
		}
		match, err := pred.Matches(undecided.Value, undecided.Memo)
		if err != nil {
			return storage.ListResult{}, false, true, fmt.Errorf("filtering %q: %w", undecided.Key, err)
		}
		if match {
			res.Items = append(res.Items, undecided)
		}
		key = undecided.Key + "\x00"
	}
	res.Revision = rev
	return res, full, true, nil
}
