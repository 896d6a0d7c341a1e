package history

import (
	"fmt"
	"sort"
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
// It walks only the items it returns: the count of the keys it lists at rev
// (the slice's size, and RemainingItemCount after a page) comes from the
// index (see countLocked).
func (h *History[V]) list(prefix, start string, rev, limit int64) (res storage.ListResult, full, ok bool) {
	h.RLock()
	defer h.RUnlock()
	if rev, ok = h.readableLocked(rev); !ok {
		return res, false, false
	}
	res.Revision = rev
	total := h.countLocked(prefix, start, rev)
	n := total
	if limit > 0 {
		n = min(limit, total)
	}
	res.Items = make([]storage.KeyValue, 0, n)
	if n > 0 {
		for rec := range h.index.Under(start, prefix) {
			if ver := rec.atVersion(rev); ver != nil {
				res.Items = append(res.Items, ver.val.KeyValue(rec.key, ver.rev))
				if int64(len(res.Items)) == n {
					break
				}
			}
		}
	}
	if remaining := total - int64(len(res.Items)); limit > 0 && remaining > 0 {
		full, res.RemainingItemCount = true, &remaining
	}
	return res, full, true
}

// countLocked returns how many keys under prefix, from the key start on,
// had a value at rev. The index counts the keys that exist at the latest
// revision in O(log n); an older revision's count is that one with the
// changes since rev taken back (an add counts one less, a delete one
// more), read from the log, which holds every change after the read floor.
// When more changes than keys came since, a walk of the keys at rev is the
// cheaper way, and is taken.
func (h *History[V]) countLocked(prefix, start string, rev int64) int64 {
	start = max(start, prefix)
	n := int64(h.index.CountLive(start, prefix))
	if rev == h.seen {
		return n
	}
	since := sort.Search(len(h.log), func(i int) bool { return h.log[i].Rev > rev })
	if tail := h.log[since:]; h.watchFloor <= rev && int64(len(tail)) <= n {
		for i := range tail {
			c := &tail[i]
			if c.kind() == modified || c.rec.key < start || !strings.HasPrefix(c.rec.key, prefix) {
				continue
			}
			if c.kind() == added {
				n--
			} else {
				n++
			}
		}
		return n
	}
	n = 0
	for rec := range h.index.Under(start, prefix) {
		if rec.atVersion(rev) != nil {
			n++
		}
	}
	return n
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
		for rec := range h.index.Under(key, prefix) {
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
