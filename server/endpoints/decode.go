package endpoints

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/apikit-dev/apikit/meta"
)

// readBody reads at most limit bytes of the request body; a longer body is a
// 413 RequestEntityTooLarge.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, meta.NewRequestEntityTooLarge(fmt.Sprintf("limit is %d", limit))
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, meta.NewRequestEntityTooLarge(fmt.Sprintf("limit is %d", limit))
		}
		return nil, meta.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	return b, nil
}

var objectContentTypes = []string{"application/json", "application/yaml"}

// protobufType is Kubernetes' protobuf encoding, which only resources
// implementing registry.ProtobufDecoder read.
const protobufType = "application/vnd.kubernetes.protobuf"

// isProtobuf reports whether a Content-Type is protobufType.
func isProtobuf(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == protobufType
}

// IsProtobuf reports whether a Content-Type is Kubernetes' protobuf
// encoding, for handlers of routes of their own that read it.
func IsProtobuf(contentType string) bool { return isProtobuf(contentType) }

// toJSON returns the body as JSON given its content type (JSON or YAML).
func toJSON(contentType string, body []byte) ([]byte, error) {
	mt := "application/json"
	if contentType != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(contentType); err != nil {
			return nil, meta.NewUnsupportedMediaType(contentType, objectContentTypes)
		}
	}
	switch mt {
	case "application/json":
		return body, nil
	case "application/yaml", "application/x-yaml", "text/yaml":
		j, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil, meta.NewBadRequest(fmt.Sprintf("error converting YAML to JSON: %v", err))
		}
		return j, nil
	default:
		return nil, meta.NewUnsupportedMediaType(contentType, objectContentTypes)
	}
}

// decodeObject decodes JSON into obj, checking apiVersion and kind against
// the resource and applying the fieldValidation level. Unknown fields are
// errors under Strict and warnings under Warn (the default).
func decodeObject(data []byte, obj meta.Object, gvk meta.GroupVersionKind, validation string) (warnings []string, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, meta.NewBadRequest("the request body is empty; an object is required")
	}
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, meta.NewBadRequest(fmt.Sprintf("error decoding request body: %v", err))
	}
	if _, ok := raw.(map[string]any); !ok {
		return nil, meta.NewBadRequest("the request body must be a JSON object")
	}
	// Find (and cut out of raw) the fields obj has no field for, whatever
	// the validation level: encoding/json matches names case-insensitively
	// ("Spec" fills spec), Kubernetes does not, so unknown fields must
	// never reach the typed decode.
	var dups []string
	if validation != meta.FieldValidationIgnore {
		dups = duplicateFields(data) // before data loses them below
	}
	var unknown []string
	findUnknownFields(raw, reflect.TypeOf(obj), "", &unknown)
	if len(unknown) > 0 {
		var err error
		if data, err = json.Marshal(raw); err != nil {
			return nil, meta.NewBadRequest(fmt.Sprintf("error decoding request body: %v", err))
		}
	}
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, meta.NewBadRequest(decodeErrorMessage(err))
	}
	if u, ok := obj.(UnknownFielder); ok {
		unknown = append(unknown, u.UnknownFields()...)
	}
	tm := obj.GetTypeMeta()
	want := gvk.GroupVersion().String()
	if tm.APIVersion != "" && tm.APIVersion != want {
		return nil, meta.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", tm.APIVersion, want))
	}
	if tm.Kind != "" && tm.Kind != gvk.Kind {
		return nil, meta.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", tm.Kind, gvk.Kind))
	}
	tm.APIVersion, tm.Kind = want, gvk.Kind
	if validation == meta.FieldValidationIgnore {
		return nil, nil
	}
	// As Kubernetes' strict decoding: unknown fields (sorted), then the
	// fields given twice (in the order found; the last value is kept).
	sort.Strings(unknown)
	var problems []string
	for _, u := range unknown {
		problems = append(problems, fmt.Sprintf("unknown field %q", u))
	}
	for _, d := range dups {
		problems = append(problems, fmt.Sprintf("duplicate field %q", d))
	}
	if len(problems) == 0 {
		return nil, nil
	}
	if validation == meta.FieldValidationStrict {
		return nil, meta.NewBadRequest("strict decoding error: " + strings.Join(problems, ", "))
	}
	return problems, nil
}

// UnknownFielder is implemented by an object that decodes itself and
// drops the fields its schema does not know (a custom resource, pruned by
// its CRD's schema): UnknownFields lists their paths after a decode, and
// they are reported as the fields a Go type lacks are, warnings or, under
// fieldValidation=Strict, errors.
type UnknownFielder interface {
	UnknownFields() []string
}

// decodeErrorMessage phrases a json error the way users can act on.
func decodeErrorMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("error decoding request body: field %s: cannot use %s as %s", te.Field, te.Value, te.Type)
	}
	return fmt.Sprintf("error decoding request body: %v", err)
}

var (
	unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	fieldMaps       sync.Map // reflect.Type -> map[string]reflect.StructField
)

// jsonFields returns the JSON fields of a struct type by name (inline
// embedded structs flattened), as encoding/json sees them.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	if m, ok := fieldMaps.Load(t); ok {
		return m.(map[string]reflect.StructField)
	}
	m := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		ft := f.Type
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					m[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f
	}
	fieldMaps.Store(t, m)
	return m
}

// findUnknownFields appends the paths of JSON fields that t has no field
// for, and deletes them from v.
func findUnknownFields(v any, t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || t.Implements(unmarshalerType) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFields(t)
		for k, child := range obj {
			f, ok := fields[k]
			p := k
			if path != "" {
				p = path + "." + k
			}
			if !ok {
				*out = append(*out, p)
				delete(obj, k)
				continue
			}
			findUnknownFields(child, f.Type, p, out)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, child := range obj {
			findUnknownFields(child, t.Elem(), path+"["+k+"]", out)
		}
	case reflect.Slice, reflect.Array:
		list, ok := v.([]any)
		if !ok || t.Elem().Kind() == reflect.Uint8 {
			return
		}
		for i, child := range list {
			findUnknownFields(child, t.Elem(), path+"["+strconv.Itoa(i)+"]", out)
		}
	}
}
