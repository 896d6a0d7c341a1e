package registry

import (
	"slices"

	"github.com/apikit-dev/apikit/meta"
)

// orphans reports whether a delete with opts of an object with metadata m
// orphans its dependents, as kube-apiserver decides: the options first (the
// deprecated orphanDependents, then propagationPolicy), then a finalizer the
// object already carries, and Background (no orphaning) by default.
func orphans(m *meta.ObjectMeta, opts DeleteOptions) bool {
	if opts.OrphanDependents != nil {
		return *opts.OrphanDependents
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case meta.DeletePropagationOrphan:
			return true
		case meta.DeletePropagationBackground, meta.DeletePropagationForeground:
			return false
		}
	}
	for _, f := range m.Finalizers {
		switch f {
		case meta.FinalizerOrphanDependents:
			return true
		case meta.FinalizerDeleteDependents:
			return false
		}
	}
	return false
}

// deletesInForeground reports whether a delete with opts of an object with
// metadata m waits for the dependents to be deleted first.
func deletesInForeground(m *meta.ObjectMeta, opts DeleteOptions) bool {
	if opts.OrphanDependents != nil {
		return false
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case meta.DeletePropagationForeground:
			return true
		case meta.DeletePropagationBackground, meta.DeletePropagationOrphan:
			return false
		}
	}
	return slices.Contains(m.Finalizers, meta.FinalizerDeleteDependents)
}

// gcFinalizers returns the finalizers a delete with opts leaves on an
// object with metadata m: its own, with the orphan or foregroundDeletion
// finalizer the policy asks for in place of those it had. ok is false when
// nothing changes (also when no garbage collector runs).
func gcFinalizers(m *meta.ObjectMeta, opts DeleteOptions) (out []string, ok bool) {
	if !opts.GarbageCollection {
		return nil, false
	}
	out = make([]string, 0, len(m.Finalizers)+1)
	for _, f := range m.Finalizers {
		if f != meta.FinalizerOrphanDependents && f != meta.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if orphans(m, opts) {
		out = append(out, meta.FinalizerOrphanDependents)
	}
	if deletesInForeground(m, opts) {
		out = append(out, meta.FinalizerDeleteDependents)
	}
	if sameSet(out, m.Finalizers) {
		return nil, false
	}
	return out, true
}

// setGCFinalizers sets the finalizers a delete with opts asks for on m and
// reports whether they changed.
func setGCFinalizers(m *meta.ObjectMeta, opts DeleteOptions) bool {
	out, ok := gcFinalizers(m, opts)
	if ok {
		m.Finalizers = out
	}
	return ok
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
