// Package strictjson decodes JSON documents strictly and reports every problem at once: each unknown key,
// each missing required key (a field whose json tag lacks omitempty) and type errors, by dotted JSON path.
// The standard decoder stops at the first unknown field and matches keys case-insensitively; walking the raw
// value first reports them all and keeps "Q_MAX" from silently filling q_max. The model catalog and the
// capacity artifacts both load through it.
package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Decode decodes data into v (a pointer to a struct) and returns one problem per unknown key, missing
// required key or type error, each starting with the field's path. unknownHint ends the unknown-field
// problems ("unknown field: <hint>"); wantObject is what the "not a JSON object" problem says the document is.
func Decode(data []byte, v any, unknownHint, wantObject string) []string {
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		return []string{fmt.Sprintf("not valid JSON: %v", err)}
	}
	if _, ok := raw.(map[string]any); !ok {
		return []string{"not a JSON object: " + wantObject}
	}
	problems := walk(raw, reflect.TypeOf(v).Elem(), "", unknownHint)
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "(value)"
			}
			problems = append(problems, fmt.Sprintf("%s: has JSON type %s, want %s", field, te.Value, te.Type))
		} else {
			problems = append(problems, fmt.Sprintf("cannot decode: %v", err))
		}
	}
	return problems
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// walk compares a decoded JSON value with a Go type and returns one problem per unknown key and per missing
// required key.
func walk(raw any, t reflect.Type, prefix, hint string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // e.g. time.Time: a leaf with its own syntax
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		arr, ok := raw.([]any)
		if !ok {
			return nil // type errors are reported by the decoder
		}
		var out []string
		for i, el := range arr {
			out = append(out, walk(el, t.Elem(), fmt.Sprintf("%s[%d]", strings.TrimSuffix(prefix, "."), i)+".", hint)...)
		}
		return out
	case reflect.Struct:
	default:
		return nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil
	}
	type field struct {
		t        reflect.Type
		required bool
	}
	fields := map[string]field{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		fields[name] = field{t: f.Type, required: !strings.Contains(opts, "omitempty")}
	}
	var out []string
	for _, k := range sortedKeys(obj) {
		f, ok := fields[k]
		if !ok {
			out = append(out, fmt.Sprintf("%s%s: unknown field: %s", prefix, k, hint))
			continue
		}
		out = append(out, walk(obj[k], f.t, prefix+k+".", hint)...)
	}
	for _, n := range sortedKeys(fields) {
		if _, present := obj[n]; !present && fields[n].required {
			out = append(out, fmt.Sprintf("%s%s: missing required field", prefix, n))
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
