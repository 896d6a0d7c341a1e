package registry

import "context"

// ConvertWatch starts watch and returns a channel carrying each of its
// events as convert makes it, in order: for a resource served over
// another (a version a conversion webhook converts) or an informer over a
// resource whose items are not its type. An event convert marks last (an
// error) ends the watch once it is delivered.
//
// The channel closes when the source's does or ctx ends. The goroutine
// feeding it owns the source: before it returns it cancels the context
// watch was given and reads the source to its end (a Resource's watch
// closes its channel once its context is done), so that the source's
// sender is never left blocked and the source's own resources are freed
// even while the caller's ctx lives on.
func ConvertWatch[In, Out any](ctx context.Context, watch func(context.Context) (<-chan In, error),
	convert func(ctx context.Context, ev In) (out Out, last bool)) (<-chan Out, error) {
	ctx, cancel := context.WithCancel(ctx)
	in, err := watch(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	out := make(chan Out)
	go func() {
		defer close(out)
		defer func() {
			cancel()
			for range in {
			}
		}()
		for ev := range in {
			o, last := convert(ctx, ev)
			select {
			case out <- o:
			case <-ctx.Done():
				return
			}
			if last {
				return
			}
		}
	}()
	return out, nil
}
