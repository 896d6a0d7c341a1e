package resources

import (
	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/internal/k8sproto"
)

// The protobuf decoders of flowcontrol.apiserver.k8s.io/v1's kinds, which
// client-go's typed clients post in protobuf; field numbers are the
// protobuf tags on package flowcontrol's types.
var (
	flowSchemasProtobuf    = k8sproto.NewDecoder[flowcontrol.FlowSchema]("FlowSchema")
	priorityLevelsProtobuf = k8sproto.NewDecoder[flowcontrol.PriorityLevelConfiguration]("PriorityLevelConfiguration")
)
