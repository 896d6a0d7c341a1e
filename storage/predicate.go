package storage

import "github.com/apikit-dev/apikit/meta"

// AttrFunc extracts the labels and selectable fields of an encoded object.
type AttrFunc func(value []byte) (labels, fields meta.Set, err error)

// Attrs are the selectable attributes of one object.
type Attrs struct {
	Labels meta.Set
	Fields meta.Set
}

type attrsMemoKey struct{}

// Predicate selects objects by label and field selectors. The zero value
// matches everything.
type Predicate struct {
	Label meta.Selector
	Field meta.Selector
	// GetAttrs decodes what the selectors need. It is required when either
	// selector is not empty.
	GetAttrs AttrFunc
	// AttrsKey, when not nil, is the key of GetAttrs's results in a
	// value's memo, instead of the one every predicate shares by default:
	// stores that read one storage and select on different fields
	// (core/v1 and events.k8s.io/v1 events) must not read each other's
	// attributes. It must be comparable, the same for every predicate
	// with the same GetAttrs, and boxed once (a key made per call would
	// allocate on every match).
	AttrsKey any
}

// attrsKey is the memo key of the attributes p's GetAttrs decodes.
func (p Predicate) attrsKey() any {
	if p.AttrsKey != nil {
		return p.AttrsKey
	}
	return attrsMemoKey{}
}

// Empty reports whether p matches everything.
func (p Predicate) Empty() bool {
	return (p.Label == nil || p.Label.Empty()) && (p.Field == nil || p.Field.Empty())
}

// Matches reports whether the encoded value matches. A memo, when given,
// caches the decoded attributes for the value.
func (p Predicate) Matches(value []byte, memo *Memo) (bool, error) {
	if p.Empty() {
		return true, nil
	}
	var a Attrs
	if v, ok := memo.Load(p.attrsKey()); ok {
		a = v.(Attrs)
	} else {
		l, f, err := p.GetAttrs(value)
		if err != nil {
			return false, err
		}
		a = Attrs{Labels: l, Fields: f}
		memo.LoadOrStore(p.attrsKey(), a)
	}
	return p.MatchesAttrs(a), nil
}

// MatchesMemoized is Matches for a value whose memo already holds its
// attributes; known is false when it does not, and Matches would decode the
// value. A store holding a lock answers what it can without decoding.
func (p Predicate) MatchesMemoized(memo *Memo) (match, known bool) {
	if p.Empty() {
		return true, true
	}
	v, ok := memo.Load(p.attrsKey())
	if !ok {
		return false, false
	}
	return p.MatchesAttrs(v.(Attrs)), true
}

// MatchesAttrs reports whether already-extracted attributes match.
func (p Predicate) MatchesAttrs(a Attrs) bool {
	if p.Label != nil && !p.Label.Empty() && !p.Label.Matches(a.Labels) {
		return false
	}
	if p.Field != nil && !p.Field.Empty() && !p.Field.Matches(a.Fields) {
		return false
	}
	return true
}

// FilterEvent applies p to a change and returns the event a watcher with
// that predicate must see, or false when it must see nothing: an object
// that starts matching is Added, one that stops matching is Deleted (with
// its previous value), and one that never matched is invisible.
func (p Predicate) FilterEvent(ev Event) (Event, bool, error) {
	if p.Empty() || ev.Type == Bookmark || ev.Type == ErrorEvent {
		return ev, true, nil
	}
	cur, err := p.Matches(ev.Value, ev.Memo)
	if err != nil {
		return ev, false, err
	}
	if ev.Type != Modified {
		return ev, cur, nil
	}
	prev := false
	if ev.PrevValue != nil {
		if prev, err = p.Matches(ev.PrevValue, nil); err != nil {
			return ev, false, err
		}
	}
	switch {
	case cur && prev:
		return ev, true, nil
	case cur && !prev:
		ev.Type = Added
		return ev, true, nil
	case !cur && prev:
		return Event{Type: Deleted, Key: ev.Key, Value: ev.PrevValue, Revision: ev.Revision}, true, nil
	default:
		return ev, false, nil
	}
}
