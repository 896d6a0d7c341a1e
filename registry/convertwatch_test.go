package registry_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/registry"
)

// countingSource is a watch that sends n, n+1, ... (up to max when max is
// positive, then closes) until its context ends, as a Resource's watch
// does; done closes when its goroutine has returned.
func countingSource(max int) (watch func(context.Context) (<-chan int, error), done <-chan struct{}) {
	d := make(chan struct{})
	return func(ctx context.Context) (<-chan int, error) {
		ch := make(chan int)
		go func() {
			defer close(d)
			defer close(ch)
			for n := 1; max <= 0 || n <= max; n++ {
				select {
				case ch <- n:
				case <-ctx.Done():
					return
				}
			}
		}()
		return ch, nil
	}, d
}

// waitClosed fails the test unless ch closes within a generous deadline.
func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not end", what)
	}
}

// collect reads ch to its end, calling stop once it has read stopAfter
// events (when that is positive).
func collect(t *testing.T, ch <-chan int, stopAfter int, stop func()) []int {
	t.Helper()
	var got []int
	deadline := time.After(30 * time.Second)
	for {
		select {
		case v, ok := <-ch:
			if !ok {
				return got
			}
			got = append(got, v)
			if len(got) == stopAfter {
				stop()
			}
		case <-deadline:
			t.Fatalf("the converted watch did not close; got %v", got)
		}
	}
}

func TestConvertWatch(t *testing.T) {
	times10 := func(_ context.Context, n int) (int, bool) { return 10 * n, false }
	for _, tc := range []struct {
		name    string
		max     int // the source's last event; 0: until its context ends
		convert func(context.Context, int) (int, bool)
		cancel  int // the caller's context ends after this many events
		want    []int
	}{
		{name: "every event converted, in order", max: 3, convert: times10, want: []int{10, 20, 30}},
		{name: "a last event ends the watch and the source", convert: func(_ context.Context, n int) (int, bool) { return 10 * n, n == 2 },
			want: []int{10, 20}},
		{name: "the caller's context ends it", convert: times10, cancel: 1, want: []int{10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			watch, sourceDone := countingSource(tc.max)
			out, err := registry.ConvertWatch(ctx, watch, tc.convert)
			if err != nil {
				t.Fatal(err)
			}
			got := collect(t, out, tc.cancel, cancel)
			// A caller that canceled may still get the events whose
			// sends raced its cancel.
			if tc.cancel > 0 && len(got) > tc.cancel {
				got = got[:tc.cancel]
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			// The source's goroutine has ended though the caller's
			// context (in the first two cases) still lives.
			waitClosed(t, "the source", sourceDone)
		})
	}
}

func TestConvertWatchError(t *testing.T) {
	boom := errors.New("boom")
	var given context.Context
	_, err := registry.ConvertWatch(context.Background(), func(ctx context.Context) (<-chan int, error) {
		given = ctx
		return nil, boom
	}, func(_ context.Context, n int) (int, bool) { return n, false })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	waitClosed(t, "the context watch was given", given.Done())
}
