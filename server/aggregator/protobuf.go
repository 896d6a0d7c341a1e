package aggregator

import "github.com/apikit-dev/apikit/internal/k8sproto"

// apiServicesProtobuf reads APIServices in protobuf, as the kube-aggregator
// clientset posts them; field numbers are the protobuf tags on APIService.
var apiServicesProtobuf = k8sproto.NewDecoder[APIService]("APIService")
