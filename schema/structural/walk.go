package structural

import (
	"sort"
	"strconv"
	"strings"

	"github.com/apikit-dev/apikit/meta"
)

// lazyPath is the field path of a walk over a value, made into a
// meta.Path only when an error needs one: most values have no errors, and
// building every node's path would be most of a walk's cost.
type lazyPath struct {
	base  *meta.Path
	steps []step
}

// step is one field (child), map entry (key) or list element (index). In
// a kube-openapi path a key is always preceded by a dot, even at the root
// (".foo"), where a property is not ("foo").
type step struct {
	kind  stepKind
	name  string
	index int
}

type stepKind uint8

const (
	childStep stepKind = iota
	keyStep
	indexStep
)

func (l *lazyPath) push(s step) { l.steps = append(l.steps, s) }
func (l *lazyPath) pop()        { l.steps = l.steps[:len(l.steps)-1] }

func (l *lazyPath) path() *meta.Path {
	p := l.base
	for _, s := range l.steps {
		switch s.kind {
		case childStep:
			p = p.Child(s.name)
		case keyStep:
			p = p.Key(s.name)
		case indexStep:
			p = p.Index(s.index)
		}
	}
	return p
}

// sortByField orders errors by their field, keeping the order of one
// field's: a walk visits map entries in Go's random order.
func sortByField(errs meta.FieldErrors) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
}

// pathStack is the steps to the node a validation is at, shared by the
// validators of its subschemas.
type pathStack struct {
	steps []step
}

// opath is the path of one node as kube-openapi writes it ("spec.items[0]",
// "" at the root): the first n steps of a pathStack, rendered only when an
// error needs it. A node's steps stay put while it is validated.
type opath struct {
	ps *pathStack
	n  int
}

// push returns the path of a child of p's node; the next sibling's push
// takes the step's place, so nothing needs popping.
func (p opath) push(s step) opath {
	p.ps.steps = append(p.ps.steps[:p.n], s)
	return opath{ps: p.ps, n: p.n + 1}
}

// String renders the path as kube-openapi does.
func (p opath) String() string {
	if p.ps == nil || p.n == 0 {
		return ""
	}
	var b strings.Builder
	for i, s := range p.ps.steps[:p.n] {
		switch s.kind {
		case indexStep:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		default:
			if i > 0 || s.kind == keyStep {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		}
	}
	return b.String()
}
