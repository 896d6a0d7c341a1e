package endpoints

import (
	"mime"
	"strings"

	"github.com/apikit-dev/apikit/meta"
)

// outputForm is how a response body is rendered.
type outputForm int

const (
	formJSON outputForm = iota
	formYAML
	formTable
	formPartialMetadata
)

// supportedOutputs are the media types named in 406 errors.
var supportedOutputs = []string{"application/json", "application/yaml",
	"application/json;as=Table;v=v1;g=meta.k8s.io",
	"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"}

// watchOutputs are the media types named in a watch's 406: those with
// stream framing.
var watchOutputs = []string{"application/json",
	"application/json;as=Table;v=v1;g=meta.k8s.io",
	"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"}

// negotiate picks the first Accept entry the server can produce. Table and
// PartialObjectMetadata are only offered where allowTransform is set (reads).
func negotiate(accept string, allowTransform bool) (outputForm, error) {
	if strings.TrimSpace(accept) == "" {
		return formJSON, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if as := params["as"]; as != "" {
			if !allowTransform || params["g"] != "meta.k8s.io" || (mt != "application/json" && mt != "*/*") {
				continue
			}
			switch {
			case as == "Table" && (params["v"] == "v1" || params["v"] == "v1beta1"):
				return formTable, nil
			case (as == "PartialObjectMetadata" || as == "PartialObjectMetadataList") && (params["v"] == "v1" || params["v"] == "v1beta1"):
				return formPartialMetadata, nil
			}
			continue
		}
		switch mt {
		case "application/json", "application/*", "*/*", "application/json-patch+json", "application/merge-patch+json":
			return formJSON, nil
		case "application/yaml", "text/yaml", "application/x-yaml":
			return formYAML, nil
		}
	}
	return formJSON, meta.NewNotAcceptable(supportedOutputs)
}
