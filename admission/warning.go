package admission

import "context"

type warningKey struct{}

// WithWarnings returns a context whose AddWarning calls go to add: the
// handler of a write gives the Warning headers of its response so.
func WithWarnings(ctx context.Context, add func(msg string)) context.Context {
	return context.WithValue(ctx, warningKey{}, add)
}

// AddWarning sends msg to the client as a Warning header (kube-apiserver's
// warning.AddWarning), when the request's context takes warnings.
func AddWarning(ctx context.Context, msg string) {
	if add, ok := ctx.Value(warningKey{}).(func(string)); ok && msg != "" {
		add(msg)
	}
}
