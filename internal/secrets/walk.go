package secrets

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"
)

// Masked returns a copy of v with every secret of s masked in every string it holds: struct fields, slice,
// array and map elements, map keys, what pointers point at and what interfaces hold, at any depth, so that a
// string field added to a type later is masked without being named anywhere. Byte slices are masked as text
// (a json.RawMessage as a JSON document, see MaskJSON). Shared pointers stay shared in the copy and cycles are
// followed once; v itself is never changed.
//
// Masked fails closed: a type it cannot walk (a func, a chan, an unsafe pointer, a uintptr, or an unexported
// field that could hold text) is an error naming the type and the field, even when the value is nil or empty,
// and nothing is returned; so is a map whose keys mask to the same text.
func Masked[T any](s *Set, v T) (T, error) {
	var zero T
	rv := reflect.ValueOf(&v).Elem()
	if err := checkType(rv.Type()); err != nil {
		return zero, err
	}
	w := walker{set: s, ptrs: map[ptrKey]reflect.Value{}}
	out, err := w.copy(rv, rv.Type().String())
	if err != nil {
		return zero, err
	}
	return out.Interface().(T), nil
}

// UnmaskableError is a type the walker cannot mask: Masked refuses it rather than let its text through.
type UnmaskableError struct {
	// Type is the type that cannot be walked and Path where it was met ("report.Report.Results[].Hook").
	Type string
	Path string
	// Why says what is wrong with it.
	Why string
}

func (e *UnmaskableError) Error() string {
	return fmt.Sprintf("cannot mask secrets in %s (%s): %s; teach secrets.Masked this type or change the field", e.Path, e.Type, e.Why)
}

// opaque are struct types with unexported fields that hold no text a provider can set.
var opaque = map[reflect.Type]bool{
	reflect.TypeOf(time.Time{}): true,
}

var rawMessage = reflect.TypeOf(json.RawMessage(nil))

// checked caches the types checkType accepted.
var checked sync.Map

// checkType fails on any type reachable from t that the walker cannot mask. Interfaces are checked when a
// value is met, by the walk itself.
func checkType(t reflect.Type) error {
	if _, ok := checked.Load(t); ok {
		return nil
	}
	if err := checkTypeAt(t, t.String(), map[reflect.Type]bool{}); err != nil {
		return err
	}
	checked.Store(t, true)
	return nil
}

func checkTypeAt(t reflect.Type, path string, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.Interface:
		return nil
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return checkTypeAt(t.Elem(), path+elemSuffix(t), seen)
	case reflect.Map:
		if err := checkTypeAt(t.Key(), path+"{key}", seen); err != nil {
			return err
		}
		return checkTypeAt(t.Elem(), path+"{value}", seen)
	case reflect.Struct:
		if opaque[t] {
			return nil
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			at := path + "." + f.Name
			if !f.IsExported() {
				if !plain(f.Type) {
					return &UnmaskableError{Type: f.Type.String(), Path: at, Why: "an unexported field that can hold text cannot be copied masked"}
				}
				continue
			}
			if err := checkTypeAt(f.Type, at, seen); err != nil {
				return err
			}
		}
		return nil
	}
	return &UnmaskableError{Type: t.String(), Path: path, Why: "a " + t.Kind().String() + " is no data the walker knows"}
}

func elemSuffix(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		return ""
	}
	return "[]"
}

// plain tells whether values of t are numbers and booleans only (safe to copy unwalked).
func plain(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return plain(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if !plain(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

type ptrKey struct {
	p uintptr
	t reflect.Type
}

// walker copies values, masking their strings.
type walker struct {
	set  *Set
	ptrs map[ptrKey]reflect.Value
}

// copyJSON is the walk of the values a JSON decoder makes (strings, numbers, booleans, map[string]any and
// []any), without reflection: ok is false for any other value, which copy walks instead. A decoded document
// is most of what is masked, and reflection costs four times as much on it.
func (w *walker) copyJSON(x any, path string) (out any, ok bool, err error) {
	switch t := x.(type) {
	case string:
		return w.set.Mask(t), true, nil
	case float64, bool, json.Number:
		return t, true, nil
	case map[string]any:
		if t == nil {
			return t, true, nil
		}
		m := make(map[string]any, len(t))
		for k, e := range t {
			mk := w.set.Mask(k)
			if _, dup := m[mk]; dup {
				return nil, true, &UnmaskableError{Type: "map[string]interface {}", Path: path, Why: "two keys mask to the same text"}
			}
			c, err := w.copyAny(e, path) // no path per element: building it would cost more than the copy
			if err != nil {
				return nil, true, err
			}
			m[mk] = c
		}
		return m, true, nil
	case []any:
		if t == nil {
			return t, true, nil
		}
		l := make([]any, len(t))
		for i, e := range t {
			c, err := w.copyAny(e, path)
			if err != nil {
				return nil, true, err
			}
			l[i] = c
		}
		return l, true, nil
	}
	return nil, false, nil
}

// copyAny is a masked copy of what an interface holds.
func (w *walker) copyAny(x any, path string) (any, error) {
	if x == nil {
		return nil, nil
	}
	if c, ok, err := w.copyJSON(x, path); ok {
		return c, err
	}
	c, err := w.copy(reflect.ValueOf(&x).Elem(), path)
	if err != nil {
		return nil, err
	}
	return c.Interface(), nil
}

// copy returns a masked copy of v (a new value of v's type).
func (w *walker) copy(v reflect.Value, path string) (reflect.Value, error) {
	t := v.Type()
	out := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.String:
		out.SetString(w.set.Mask(v.String()))
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		out.Set(v)
	case reflect.Interface:
		if v.IsNil() {
			return out, nil
		}
		if c, ok, err := w.copyJSON(v.Interface(), path); ok {
			if err != nil {
				return out, err
			}
			out.Set(reflect.ValueOf(c))
			return out, nil
		}
		inner := v.Elem()
		if err := checkType(inner.Type()); err != nil {
			if u, ok := err.(*UnmaskableError); ok {
				u.Path = path + "(" + u.Path + ")"
			}
			return out, err
		}
		c, err := w.copy(inner, path)
		if err != nil {
			return out, err
		}
		out.Set(c)
	case reflect.Pointer:
		if v.IsNil() {
			return out, nil
		}
		k := ptrKey{v.Pointer(), t}
		if p, ok := w.ptrs[k]; ok {
			return p, nil
		}
		p := reflect.New(t.Elem())
		w.ptrs[k] = p
		c, err := w.copy(v.Elem(), path)
		if err != nil {
			return out, err
		}
		p.Elem().Set(c)
		return p, nil
	case reflect.Slice:
		if v.IsNil() {
			return out, nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			b := v.Bytes()
			var masked []byte
			if t == rawMessage {
				masked = w.set.MaskJSON(b)
			} else {
				masked = []byte(w.set.Mask(string(b)))
			}
			out.SetBytes(masked)
			return out, nil
		}
		out.Set(reflect.MakeSlice(t, v.Len(), v.Len()))
		for i := 0; i < v.Len(); i++ {
			c, err := w.copy(v.Index(i), path+"[]")
			if err != nil {
				return out, err
			}
			out.Index(i).Set(c)
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			c, err := w.copy(v.Index(i), path+"[]")
			if err != nil {
				return out, err
			}
			out.Index(i).Set(c)
		}
	case reflect.Map:
		if v.IsNil() {
			return out, nil
		}
		out.Set(reflect.MakeMapWithSize(t, v.Len()))
		iter := v.MapRange()
		for iter.Next() {
			key, err := w.copy(iter.Key(), path+"{key}")
			if err != nil {
				return out, err
			}
			if out.MapIndex(key).IsValid() {
				return out, &UnmaskableError{Type: t.String(), Path: path, Why: "two keys mask to the same text"}
			}
			val, err := w.copy(iter.Value(), path+"{value}")
			if err != nil {
				return out, err
			}
			out.SetMapIndex(key, val)
		}
	case reflect.Struct:
		out.Set(v) // unexported fields are plain (checkType) or the type is opaque
		if opaque[t] {
			return out, nil
		}
		for i := 0; i < t.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			c, err := w.copy(v.Field(i), path+"."+t.Field(i).Name)
			if err != nil {
				return out, err
			}
			out.Field(i).Set(c)
		}
	default:
		return out, &UnmaskableError{Type: t.String(), Path: path, Why: "a " + t.Kind().String() + " is no data the walker knows"}
	}
	return out, nil
}
