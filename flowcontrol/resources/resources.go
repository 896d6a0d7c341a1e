package resources

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// The resources of the group.
var (
	FlowSchemas    = meta.GroupResource{Group: flowcontrol.GroupName, Resource: "flowschemas"}
	PriorityLevels = meta.GroupResource{Group: flowcontrol.GroupName, Resource: "prioritylevelconfigurations"}
)

type (
	flowSchema    = flowcontrol.FlowSchema
	priorityLevel = flowcontrol.PriorityLevelConfiguration
)

// strategy defaults and validates an object the same way on create and
// update, as kube-apiserver's flowcontrol strategies do.
type strategy[T meta.Object] struct {
	registry.DefaultStrategy[T]
	defaults func(T)
	validate func(T) meta.FieldErrors
}

// Default implements registry.Defaulter: kube-apiserver's flowcontrol
// defaults are defaulting functions, applied before admission.
func (s strategy[T]) Default(obj T) { s.defaults(obj) }

func (s strategy[T]) Validate(_ context.Context, obj T) meta.FieldErrors { return s.validate(obj) }

func (s strategy[T]) ValidateUpdate(_ context.Context, obj, _ T) meta.FieldErrors {
	return s.validate(obj)
}

// API is one server's flowcontrol.apiserver.k8s.io/v1 resources.
type API struct {
	FlowSchemas    *registry.Store[*flowSchema]
	PriorityLevels *registry.Store[*priorityLevel]
}

// New builds the stores on the storage f gives each resource.
func New(f storage.Factory) (*API, error) {
	fsStorage, err := f.For(FlowSchemas)
	if err != nil {
		return nil, fmt.Errorf("flowschemas storage: %w", err)
	}
	plStorage, err := f.For(PriorityLevels)
	if err != nil {
		return nil, fmt.Errorf("prioritylevelconfigurations storage: %w", err)
	}
	fs, err := registry.NewStore(registry.Options[*flowSchema]{
		Resource:          FlowSchemas,
		Kind:              "FlowSchema",
		StorageVersion:    flowcontrol.Version,
		StatusSubresource: true,
		Strategy:          strategy[*flowSchema]{defaults: flowcontrol.SetFlowSchemaDefaults, validate: flowcontrol.ValidateFlowSchema},
		Storage:           fsStorage,
		Columns: []registry.Column[*flowSchema]{
			{Name: "PriorityLevel", Type: "string", Value: func(fs *flowSchema) any { return fs.Spec.PriorityLevelConfiguration.Name }},
			{Name: "MatchingPrecedence", Type: "string", Value: func(fs *flowSchema) any {
				return strconv.Itoa(int(fs.Spec.MatchingPrecedence))
			}},
			{Name: "DistinguisherMethod", Type: "string", Value: func(fs *flowSchema) any {
				if fs.Spec.DistinguisherMethod == nil {
					return "<none>"
				}
				return string(fs.Spec.DistinguisherMethod.Type)
			}},
			{Name: "MissingPL", Type: "string", Value: func(fs *flowSchema) any {
				for _, c := range fs.Status.Conditions {
					if c.Type == flowcontrol.FlowSchemaConditionDangling {
						return string(c.Status)
					}
				}
				return "?"
			}},
		},
	})
	if err != nil {
		return nil, err
	}
	pl, err := registry.NewStore(registry.Options[*priorityLevel]{
		Resource:          PriorityLevels,
		Kind:              "PriorityLevelConfiguration",
		StorageVersion:    flowcontrol.Version,
		StatusSubresource: true,
		Strategy:          strategy[*priorityLevel]{defaults: flowcontrol.SetPriorityLevelDefaults, validate: flowcontrol.ValidatePriorityLevel},
		Storage:           plStorage,
		Columns: []registry.Column[*priorityLevel]{
			{Name: "Type", Type: "string", Value: func(pl *priorityLevel) any { return string(pl.Spec.Type) }},
			{Name: "NominalConcurrencyShares", Type: "string", Value: func(pl *priorityLevel) any {
				if l := pl.Spec.Limited; l != nil && l.NominalConcurrencyShares != nil {
					return strconv.Itoa(int(*l.NominalConcurrencyShares))
				}
				return "<none>"
			}},
			{Name: "Queues", Type: "string", Value: queuing(func(q *flowcontrol.QueuingConfiguration) int32 { return q.Queues })},
			{Name: "HandSize", Type: "string", Value: queuing(func(q *flowcontrol.QueuingConfiguration) int32 { return q.HandSize })},
			{Name: "QueueLengthLimit", Type: "string", Value: queuing(func(q *flowcontrol.QueuingConfiguration) int32 { return q.QueueLengthLimit })},
		},
	})
	if err != nil {
		return nil, err
	}
	return &API{FlowSchemas: fs, PriorityLevels: pl}, nil
}

func queuing(f func(*flowcontrol.QueuingConfiguration) int32) func(*priorityLevel) any {
	return func(pl *priorityLevel) any {
		if l := pl.Spec.Limited; l != nil && l.LimitResponse.Queuing != nil {
			return strconv.Itoa(int(f(l.LimitResponse.Queuing)))
		}
		return "<none>"
	}
}

// Resources returns what the server installs as
// flowcontrol.apiserver.k8s.io/v1.
func (a *API) Resources() []registry.Resource {
	return []registry.Resource{registry.ServeProtobuf(a.FlowSchemas, flowSchemasProtobuf.ToJSON),
		registry.ServeProtobuf(a.PriorityLevels, priorityLevelsProtobuf.ToJSON)}
}
