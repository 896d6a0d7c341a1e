package registry

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/meta"
)

// typeInfo is what the Store learns once, by reflection, about its Go type:
// how to allocate it and which top-level fields are the spec and the status.
type typeInfo struct {
	elem reflect.Type
	// status is the index of the field whose JSON name is "status", or -1.
	status int
	// spec lists every other top-level field besides TypeMeta and ObjectMeta:
	// a change in any of them bumps metadata.generation.
	spec []int
}

var (
	typeMetaType   = reflect.TypeOf(meta.TypeMeta{})
	objectMetaType = reflect.TypeOf(meta.ObjectMeta{})
)

func newTypeInfo[T meta.Object]() (*typeInfo, error) {
	var zero T
	t := reflect.TypeOf(zero)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("registry: %v must be a pointer to a struct", t)
	}
	ti := &typeInfo{elem: t.Elem(), status: -1}
	var hasTM, hasOM bool
	for i := 0; i < ti.elem.NumField(); i++ {
		f := ti.elem.Field(i)
		switch {
		case f.Type == typeMetaType && f.Anonymous:
			hasTM = true
			continue
		case f.Type == objectMetaType:
			hasOM = true
			continue
		case !f.IsExported():
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "status" {
			ti.status = i
			continue
		}
		ti.spec = append(ti.spec, i)
	}
	if !hasTM || !hasOM {
		return nil, fmt.Errorf("registry: %v must embed meta.TypeMeta and have a meta.ObjectMeta field", ti.elem)
	}
	return ti, nil
}

func (ti *typeInfo) newObject() any { return reflect.New(ti.elem).Interface() }

// specEqual reports whether a and b agree on every spec field.
func (ti *typeInfo) specEqual(a, b any) bool {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for _, i := range ti.spec {
		if !semanticEqual(va.Field(i), vb.Field(i)) {
			return false
		}
	}
	return true
}

var timeType = reflect.TypeOf(time.Time{})

// semanticEqual is reflect.DeepEqual as Kubernetes' semantic equality has
// it: an empty slice or map equals a nil one (JSON round trips turn one
// into the other, so a client sending "tags": [] changed nothing), and
// times are equal when they are the same instant, whatever their zone.
func semanticEqual(a, b reflect.Value) bool {
	if a.Type() == timeType && a.CanInterface() {
		return a.Interface().(time.Time).Equal(b.Interface().(time.Time))
	}
	switch a.Kind() {
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		if a.Type().Elem().Kind() == reflect.Uint8 {
			return bytes.Equal(a.Bytes(), b.Bytes())
		}
		for i := range a.Len() {
			if !semanticEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range a.Len() {
			if !semanticEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !semanticEqual(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		if a.Kind() == reflect.Interface && a.Elem().Type() != b.Elem().Type() {
			return false
		}
		return semanticEqual(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !semanticEqual(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return a.IsNil() && b.IsNil()
	}
	// Scalars: compare without Interface(), which unexported fields refuse.
	switch a.Kind() {
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Complex64, reflect.Complex128:
		return a.Complex() == b.Complex()
	case reflect.String:
		return a.String() == b.String()
	}
	return false
}

// copyStatus sets dst's status to src's.
func (ti *typeInfo) copyStatus(dst, src any) {
	if ti.status < 0 {
		return
	}
	reflect.ValueOf(dst).Elem().Field(ti.status).Set(reflect.ValueOf(src).Elem().Field(ti.status))
}

// resetStatus sets obj's status to its zero value.
func (ti *typeInfo) resetStatus(obj any) {
	if ti.status < 0 {
		return
	}
	f := reflect.ValueOf(obj).Elem().Field(ti.status)
	f.Set(reflect.Zero(f.Type()))
}

// copySpec sets every spec field of dst to src's.
func (ti *typeInfo) copySpec(dst, src any) {
	vd, vs := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for _, i := range ti.spec {
		vd.Field(i).Set(vs.Field(i))
	}
}

// isNil reports whether an interface holds a nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
