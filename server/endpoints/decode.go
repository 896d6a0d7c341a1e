package endpoints

import (
	"bytes"
	"encoding/hex"
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
			return nil, &unparsableError{err: err}
		}
		return j, nil
	default:
		return nil, meta.NewUnsupportedMediaType(contentType, objectContentTypes)
	}
}

// unparsableError is a body that is not JSON or YAML at all; decodeBody
// says which kind it wanted, as kube-apiserver's "unrecognized" error does.
type unparsableError struct{ err error }

func (e *unparsableError) Error() string {
	return "the object provided is unrecognized: " + e.err.Error()
}

// unrecognized is kube-apiserver's answer to a body whose apiVersion and
// kind cannot even be read: its error, and the body's first 30 bytes (in
// hex unless it looks like JSON), so that a client sees what it sent.
func unrecognized(kind string, err error, body []byte) error {
	const max = 30
	var summary string
	switch {
	case len(body) == 0:
		summary = "<empty>"
	case body[0] == '{' && len(body) > max:
		summary = string(body[:max]) + " ..."
	case body[0] == '{':
		summary = string(body)
	case len(body) > max:
		summary = hex.EncodeToString(body[:max]) + " ..."
	default:
		summary = hex.EncodeToString(body)
	}
	return meta.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", kind, err, summary))
}

// cannotHandle is kube-apiserver's answer to a body whose apiVersion and
// kind were read but whose content does not decode into the resource's
// type: "<kind> in version "<version>" cannot be handled as a <Kind>:
// <why>", the kind and version being the body's own (or the resource's
// where the body leaves them out).
func cannotHandle(raw map[string]any, gvk meta.GroupVersionKind, why string) error {
	kind, version := gvk.Kind, gvk.Version
	if k, ok := raw["kind"].(string); ok && k != "" {
		kind = k
	}
	if av, ok := raw["apiVersion"].(string); ok && av != "" {
		version = av[strings.LastIndex(av, "/")+1:]
	}
	return meta.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %s", kind, version, gvk.Kind, why))
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
		// encoding/json's Unmarshal words a truncated body as
		// kube-apiserver's decoder does ("unexpected end of JSON input").
		if uerr := json.Unmarshal(data, new(any)); uerr != nil {
			err = uerr
		}
		return nil, unrecognized(gvk.Kind, fmt.Errorf("couldn't get version/kind; json parse error: %w", err), data)
	}
	top, ok := raw.(map[string]any)
	if !ok {
		return nil, unrecognized(gvk.Kind, errors.New("couldn't get version/kind; json parse error: the body is not a JSON object"), data)
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
			return nil, cannotHandle(top, gvk, err.Error())
		}
	}
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, cannotHandle(top, gvk, decodeErrorMessage(err))
	}
	if u, ok := obj.(UnknownFielder); ok {
		unknown = append(unknown, u.UnknownFields()...)
	}
	tm := obj.GetTypeMeta()
	want := gvk.GroupVersion().String()
	if tm.APIVersion != "" && tm.APIVersion != want {
		return nil, cannotHandle(top, gvk, fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", tm.APIVersion, want))
	}
	if tm.Kind != "" && tm.Kind != gvk.Kind {
		return nil, cannotHandle(top, gvk, fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", tm.Kind, gvk.Kind))
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
		return nil, cannotHandle(top, gvk, "strict decoding error: "+strings.Join(problems, ", "))
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
		return fmt.Sprintf("field %s: cannot use %s as %s", te.Field, te.Value, te.Type)
	}
	return err.Error()
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
