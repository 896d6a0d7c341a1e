// Package workgroup runs independent tasks a bounded number at a time and
// gathers all their errors: what a server's start does with the default
// objects it writes (RBAC roles, APF configuration), where one round trip
// per object, one after another, would hold up readiness.
package workgroup

import (
	"errors"
	"sync"
)

// Group runs tasks in goroutines, at most a limit of them at once. The
// zero Group is not usable: make one with New.
type Group struct {
	sem  chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

// New returns a Group that runs up to limit tasks at once (at least one).
func New(limit int) *Group {
	return &Group{sem: make(chan struct{}, max(limit, 1))}
}

// Go runs task once a slot is free; it blocks until then.
func (g *Group) Go(task func() error) {
	g.sem <- struct{}{}
	g.wg.Go(func() {
		defer func() { <-g.sem }()
		if err := task(); err != nil {
			g.mu.Lock()
			g.errs = append(g.errs, err)
			g.mu.Unlock()
		}
	})
}

// Wait waits for every task and returns their errors joined (nil when
// none failed).
func (g *Group) Wait() error {
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.errs...)
}
