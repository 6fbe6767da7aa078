// Package strictjson decodes JSON documents strictly and reports every problem at once: each duplicate key,
// each pair of keys that differ only in case, each unknown key, each missing required key (a field whose
// json tag lacks omitempty), each null where a value belongs, and type errors, by dotted JSON path.
//
// The standard decoder keeps the last of two duplicate keys, matches keys case-insensitively (so "Q_MAX"
// silently fills q_max), reads null as "leave the zero value" and stops at the first unknown field. A
// document that says one thing to a reader and another to the decoder is refused here instead. The model
// catalog and the capacity artifacts both load through this package; ReadFile bounds what they read.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// Decode decodes data into v (a pointer to a struct) and returns one problem per duplicate or case-variant
// key, unknown key, missing required key, null value or type error, each starting with the field's path.
// unknownHint ends the unknown-field problems ("unknown field: <hint>"); wantObject is what the "not a JSON
// object" problem says the document is. v is filled only as far as the problems allow: a caller must not use
// it when any problem is returned.
func Decode(data []byte, v any, unknownHint, wantObject string) []string {
	if !utf8.Valid(data) {
		return []string{"not valid JSON: the document is not valid UTF-8"}
	}
	var raw any
	// The standard decoder checks the syntax and bounds the nesting depth before the key scan recurses.
	if err := json.Unmarshal(data, &raw); err != nil {
		return []string{fmt.Sprintf("not valid JSON: %v", err)}
	}
	if _, ok := raw.(map[string]any); !ok {
		return []string{"not a JSON object: " + wantObject}
	}
	problems := DuplicateKeys(data)
	problems = append(problems, walk(raw, reflect.TypeOf(v).Elem(), "", unknownHint)...)
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

// DuplicateKeys returns one problem per key that appears twice in one object, or that differs from another
// key of the same object only in case (as encoding/json folds it), at any depth, objects inside arrays
// included. data must be valid JSON; syntax errors end the scan silently (Decode reports them first).
func DuplicateKeys(data []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	sc := dupScanner{foldAll: true, caseFix: ", spelled in lower case as documented"}
	_ = sc.scan(dec, nil, "")
	return sc.out
}

// DuplicateKeysFor is DuplicateKeys for a document decoded into a value of type t. In an object decoded into
// a struct a key that differs from another only in case is a duplicate too (encoding/json reads both into one
// field, the last winning: {"desired":1,"Desired":3} loaded as 3); a map's keys are data (a container
// environment may hold both PATH and Path) and only an exact repeat is one. Keys are compared unescaped
// ("desir\u0065d" is "desired").
func DuplicateKeysFor(data []byte, t reflect.Type) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var sc dupScanner
	_ = sc.scan(dec, t, "")
	return sc.out
}

// dupScanner collects a problem per duplicate key: an exact repeat anywhere, and a key that differs from
// another only in case in every object (foldAll, DuplicateKeys) or in objects decoded into a struct
// (DuplicateKeysFor). caseFix ends the case-variant problem's advice.
type dupScanner struct {
	foldAll bool
	caseFix string
	out     []string
}

// scan reads one value from dec, of Go type t (nil when unknown), and records the duplicates below it.
func (sc *dupScanner) scan(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		fold := sc.foldAll || t != nil && t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(unmarshalerType)
		seen := map[string]string{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			p := joinPath(path, key)
			k := key
			if fold {
				k = foldKey(key)
			}
			if first, dup := seen[k]; dup {
				if first == key {
					sc.out = append(sc.out, fmt.Sprintf("%s: duplicate key: %q appears more than once in the same object: keep exactly one", p, key))
				} else {
					sc.out = append(sc.out, fmt.Sprintf("%s: duplicate key: %q differs from %q only in case, and a JSON decoder would read both as one field: keep exactly one%s", p, key, first, sc.caseFix))
				}
			} else {
				seen[k] = key
			}
			if err := sc.scan(dec, childType(t, key), p); err != nil {
				return err
			}
		}
	case '[':
		var el reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			el = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := sc.scan(dec, el, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// childType is the type the member key of an object of type t decodes into: a map's element type, or the
// struct field encoding/json would pick (its JSON name exactly, else case-insensitively); nil when unknown.
func childType(t reflect.Type, key string) reflect.Type {
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem()
	case reflect.Struct:
		var folded reflect.Type
		for _, f := range reflect.VisibleFields(t) {
			if !f.IsExported() || f.Anonymous && f.Tag.Get("json") == "" {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if name == key {
				return f.Type
			}
			if folded == nil && foldKey(name) == foldKey(key) {
				folded = f.Type
			}
		}
		return folded
	}
	return nil
}

// foldKey maps a key to a canonical case-folded form: two keys encoding/json would match to the same field
// (it folds with Unicode simple folding, so "K" (Kelvin sign) matches "k" and "ſ" matches "s") fold alike.
func foldKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < least {
				least = f
			}
		}
		b.WriteRune(least)
	}
	return b.String()
}

func joinPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// walk compares a decoded JSON value at path with a Go type and returns one problem per null value, unknown
// key and missing required key.
func walk(raw any, t reflect.Type, path, hint string) []string {
	if raw == nil {
		name := path
		if name == "" {
			name = "(value)"
		}
		// The standard decoder reads null as "leave the zero value": absent and fine, which it is not.
		return []string{fmt.Sprintf("%s: is null: give a value, or leave the field out where it is optional", name)}
	}
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
			out = append(out, walk(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i), hint)...)
		}
		return out
	case reflect.Map:
		// A map's keys are data (the model catalog's prices by instance type); its values are checked as
		// values, at path["key"].
		obj, ok := raw.(map[string]any)
		if !ok {
			return nil
		}
		var out []string
		for _, k := range sortedKeys(obj) {
			out = append(out, walk(obj[k], t.Elem(), fmt.Sprintf("%s[%q]", path, k), hint)...)
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
			out = append(out, fmt.Sprintf("%s: unknown field: %s", joinPath(path, k), hint))
			continue
		}
		out = append(out, walk(obj[k], f.t, joinPath(path, k), hint)...)
	}
	for _, n := range sortedKeys(fields) {
		if _, present := obj[n]; !present && fields[n].required {
			out = append(out, fmt.Sprintf("%s: missing required field", joinPath(path, n)))
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

// ReadFile reads the regular file at path, refusing anything else before opening it (a FIFO would block
// the open, a device such as /dev/zero never ends, a directory has no contents) and anything larger than
// limit bytes. Errors name the file, what it is and the limit. Symbolic links are followed: what counts is the
// file read. The open does not block even when the path is swapped for a FIFO after the check.
func ReadFile(path string, limit int64) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, info, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Check again what was opened: the path may have changed since the first check.
	if info, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, info, limit); err != nil {
		return nil, err
	}
	return readLimited(f, path, limit)
}

// ReadFileFS is ReadFile on a file system such as the embedded catalog or os.DirFS.
func ReadFileFS(fsys fs.FS, name string, limit int64) ([]byte, error) {
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := regular(name, info, limit); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(name, info, limit); err != nil {
		return nil, err
	}
	return readLimited(f, name, limit)
}

// ErrNotRegular is wrapped by the errors of ReadFile and ReadFileFS for anything but a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the errors of ReadFile and ReadFileFS for a file above the limit.
var ErrTooLarge = errors.New("file too large")

func regular(name string, info fs.FileInfo, limit int64) error {
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, %w: pass the path of the JSON file itself", name, describeMode(info.Mode()), ErrNotRegular)
	}
	if info.Size() > limit {
		return tooLarge(name, limit)
	}
	return nil
}

func tooLarge(name string, limit int64) error {
	return fmt.Errorf("%s is larger than the %s limit: %w: this is not a file speech-infra wrote", name, FormatSize(limit), ErrTooLarge)
}

func readLimited(r io.Reader, name string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(name, limit) // it grew after the check
	}
	return data, nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file (mode " + m.String() + ")"
}

// FormatSize renders a byte count as "4 MiB", "512 KiB" or "100 bytes".
func FormatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
