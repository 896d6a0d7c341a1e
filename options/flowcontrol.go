package options

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/server"
)

// FlowControlOptions choose how the server sheds load: API Priority and
// Fairness, or plain max-in-flight limits (the GenericOptions' limits).
type FlowControlOptions struct {
	// EnablePriorityAndFairness selects API Priority and Fairness.
	EnablePriorityAndFairness bool

	// Set by Complete.

	// RequestWaitLimit is how long a request may wait in a queue: a
	// quarter of --request-timeout, as kube-apiserver has it.
	RequestWaitLimit time.Duration
}

// NewFlowControlOptions returns the default: API Priority and Fairness.
func NewFlowControlOptions() *FlowControlOptions {
	return &FlowControlOptions{EnablePriorityAndFairness: true}
}

// AddFlags adds --enable-priority-and-fairness.
func (o *FlowControlOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.EnablePriorityAndFairness, "enable-priority-and-fairness", o.EnablePriorityAndFairness,
		"If true, replace the max-in-flight handler with an enhanced one that queues and dispatches with priority and fairness")
}

// Validate has nothing to check alone; see ValidateInFlight.
func (o *FlowControlOptions) Validate() []error { return nil }

// ValidateInFlight checks the in-flight limits as kube-apiserver's
// BuildPriorityAndFairness does: with priority and fairness their sum is
// the total concurrency, which must be positive.
func (o *FlowControlOptions) ValidateInFlight(g *GenericOptions) []error {
	if o.EnablePriorityAndFairness && g.MaxRequestsInFlight+g.MaxMutatingRequestsInFlight <= 0 {
		return []error{fmt.Errorf("invalid configuration: MaxRequestsInFlight=%d and MaxMutatingRequestsInFlight=%d; they must add up to something positive",
			g.MaxRequestsInFlight, g.MaxMutatingRequestsInFlight)}
	}
	return nil
}

// Complete derives the queue wait limit from the request timeout.
func (o *FlowControlOptions) Complete(g *GenericOptions) {
	o.RequestWaitLimit = g.RequestTimeout / 4
}

// ApplyTo sets the flow-control choice and the queue wait limit.
func (o *FlowControlOptions) ApplyTo(c *server.Config) error {
	c.EnablePriorityAndFairness = o.EnablePriorityAndFairness
	c.RequestWaitLimit = o.RequestWaitLimit
	return nil
}
