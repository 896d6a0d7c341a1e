package options

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/system"
	"github.com/apikit-dev/apikit/storage"
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

	// Set by ApplyTo.

	// APF is the priority-and-fairness policy ApplyTo put in the server's
	// filter chain; nil without priority and fairness.
	APF     *flowcontrol.APF
	storage storage.Factory
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

// ApplyTo sets the flow-control choice and the queue wait limit, and puts
// the policy they make (server.DefaultFlowControl) in the server's filter
// chain. It runs after the generic options, which set the limits, and the
// etcd options, which set the storage the configuration API keeps its
// objects in.
func (o *FlowControlOptions) ApplyTo(c *server.Config) error {
	c.EnablePriorityAndFairness = o.EnablePriorityAndFairness
	c.RequestWaitLimit = o.RequestWaitLimit
	fc, err := server.DefaultFlowControl(c)
	if err != nil {
		return err
	}
	c.FlowControl = fc
	o.APF, _ = fc.(*flowcontrol.APF)
	o.storage = c.Storage
	return nil
}

// InstallSystemAPIs serves, with priority and fairness,
// flowcontrol.apiserver.k8s.io/v1 (FlowSchema and
// PriorityLevelConfiguration) and kube-apiserver's debug dumps under
// /debug/api_priority_and_fairness/, with two post-start hooks:
// priority-and-fairness-config-producer, done once the default
// configuration is stored, and priority-and-fairness-config-consumer,
// which keeps the policy in step with the stored objects and counts every
// resource's objects for list estimates until the server stops.
func (o *FlowControlOptions) InstallSystemAPIs(s *server.GenericServer) error {
	if o.APF == nil {
		return nil
	}
	return system.InstallFlowControl(s, o.storage, o.APF)
}
