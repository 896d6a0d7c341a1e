package workgroup_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/internal/workgroup"
)

func TestGroup(t *testing.T) {
	for _, limit := range []int{0, 1, 3} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			g := workgroup.New(limit)
			var running, most, done atomic.Int32
			errA, errB := errors.New("a"), errors.New("b")
			for i := range 10 {
				g.Go(func() error {
					n := running.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(2 * time.Millisecond)
					running.Add(-1)
					done.Add(1)
					switch i {
					case 3:
						return errA
					case 7:
						return errB
					}
					return nil
				})
			}
			err := g.Wait()
			if done.Load() != 10 {
				t.Errorf("%d tasks done before Wait returned, want 10", done.Load())
			}
			if !errors.Is(err, errA) || !errors.Is(err, errB) {
				t.Errorf("Wait = %v, want both errors", err)
			}
			if want := int32(max(limit, 1)); most.Load() > want {
				t.Errorf("%d tasks ran at once, limit %d", most.Load(), want)
			}
		})
	}
	if err := workgroup.New(2).Wait(); err != nil {
		t.Errorf("no tasks: %v", err)
	}
}
