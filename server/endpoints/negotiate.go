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

// plainForms are the forms of the media types without parameters.
var plainForms = []struct {
	mediaType string
	form      outputForm
}{
	{"application/json", formJSON}, {"application/*", formJSON}, {"*/*", formJSON},
	{"application/json-patch+json", formJSON}, {"application/merge-patch+json", formJSON},
	{"application/yaml", formYAML}, {"text/yaml", formYAML}, {"application/x-yaml", formYAML},
}

// plainForm is the form of media type mt, in any ASCII case (media types
// are case-insensitive; mime.ParseMediaType lowers them and refuses any
// other letter).
func plainForm(mt string) (outputForm, bool) {
	for _, p := range plainForms {
		if asciiEqualFold(mt, p.mediaType) {
			return p.form, true
		}
	}
	return 0, false
}

// asciiEqualFold is strings.EqualFold for ASCII letters only: the Kelvin
// sign is no "k" in a media type.
func asciiEqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// negotiate picks the first Accept entry the server can produce. Table and
// PartialObjectMetadata are only offered where allowTransform is set (reads).
func negotiate(accept string, allowTransform bool) (outputForm, error) {
	if strings.TrimSpace(accept) == "" {
		return formJSON, nil
	}
	for rest := accept; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		part = strings.TrimSpace(part)
		if strings.IndexByte(part, ';') < 0 {
			// No parameters (what clients send for a GET): the media
			// type alone, as mime.ParseMediaType would read it (lower
			// case; anything else matches no form), without its map.
			if form, ok := plainForm(part); ok {
				return form, nil
			}
			continue
		}
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		if params["as"] != "" {
			if form, ok := transformForm(mt, params, allowTransform); ok {
				return form, nil
			}
			continue
		}
		if form, ok := plainForm(mt); ok {
			return form, nil
		}
	}
	return formJSON, meta.NewNotAcceptable(supportedOutputs)
}

// transformForm is the form an Accept entry with an "as" parameter asks
// for (a Table or PartialObjectMetadata of meta.k8s.io v1 or v1beta1), if
// the server can produce it here.
func transformForm(mt string, params map[string]string, allowTransform bool) (outputForm, bool) {
	if !allowTransform || params["g"] != "meta.k8s.io" || (mt != "application/json" && mt != "*/*") {
		return 0, false
	}
	v, as := params["v"], params["as"]
	switch {
	case v != "v1" && v != "v1beta1":
	case as == "Table":
		return formTable, true
	case as == "PartialObjectMetadata" || as == "PartialObjectMetadataList":
		return formPartialMetadata, true
	}
	return 0, false
}
