package strictjson

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

type inner struct {
	N int `json:"n"`
}

type doc struct {
	Name  string    `json:"name"`
	Note  string    `json:"note,omitempty"`
	At    time.Time `json:"at"`
	Items []inner   `json:"items"`
}

func TestDecodeReportsEveryProblem(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
	}{
		{"valid", `{"name":"a","at":"2026-01-02T03:04:05Z","items":[{"n":1}]}`, nil},
		{"unknown, case-folded and nested unknown, missing", `{"NAME":"a","at":"2026-01-02T03:04:05Z","items":[{"n":1},{"m":2}]}`,
			[]string{"NAME: unknown field: fix it", "items[1].m: unknown field: fix it", "items[1].n: missing required field", "name: missing required field"}},
		{"type error", `{"name":1,"at":"2026-01-02T03:04:05Z","items":[]}`, []string{"name: has JSON type number, want string"}},
		{"not an object", `[1]`, []string{"not a JSON object: one doc"}},
		{"not JSON", `{`, []string{"not valid JSON: unexpected end of JSON input"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// GIVEN a document WHEN decoded strictly THEN every problem is reported by path, none hidden.
			var d doc
			got := Decode([]byte(tc.in), &d, "fix it", "one doc")
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decode(%s) =\n  %q\nwant\n  %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestDecodeRefusesDuplicateAndCaseVariantKeys(t *testing.T) {
	const at = `"at":"2026-01-02T03:04:05Z"`
	cases := []struct {
		name, in string
		want     []string
	}{
		{"exact duplicate at the top", `{"name":"a","name":"b",` + at + `,"items":[]}`,
			[]string{`name: duplicate key: "name" appears more than once in the same object: keep exactly one`}},
		{"case variant at the top", `{"name":"a","NAME":"b",` + at + `,"items":[]}`,
			[]string{`NAME: duplicate key: "NAME" differs from "name" only in case, and a JSON decoder would read both as one field: keep exactly one, spelled in lower case as documented`,
				"NAME: unknown field: fix it"}},
		{"duplicate inside an object inside an array", `{"name":"a",` + at + `,"items":[{"n":1},{"n":2,"n":3}]}`,
			[]string{`items[1].n: duplicate key: "n" appears more than once in the same object: keep exactly one`}},
		{"Kelvin sign folds to k as encoding/json folds it", `{"name":"a",` + at + `,"items":[],"k":1,"\u212a":2}`,
			[]string{"\u212a: duplicate key: \"\u212a\" differs from \"k\" only in case, and a JSON decoder would read both as one field: keep exactly one, spelled in lower case as documented",
				"k: unknown field: fix it", "\u212a: unknown field: fix it"}},
		{"duplicates in an unknown subtree are still reported", `{"name":"a",` + at + `,"items":[],"x":[[{"y":1,"Y":2}]]}`,
			[]string{`x[0][0].Y: duplicate key: "Y" differs from "y" only in case, and a JSON decoder would read both as one field: keep exactly one, spelled in lower case as documented`,
				"x: unknown field: fix it"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// GIVEN a document whose keys a reader and the decoder would read differently WHEN decoded strictly
			// THEN each duplicate is reported with its path.
			var d doc
			got := Decode([]byte(tc.in), &d, "fix it", "one doc")
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decode(%s) =\n  %q\nwant\n  %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestDecodeRefusesNull(t *testing.T) {
	// GIVEN null where a value belongs, at the top, in an array element and for an optional field WHEN decoded
	// THEN each is reported: null is not "absent and fine".
	var d doc
	got := Decode([]byte(`{"name":null,"note":null,"at":null,"items":[null,{"n":null}]}`), &d, "fix it", "one doc")
	want := []string{
		"at: is null: give a value, or leave the field out where it is optional",
		"items[0]: is null: give a value, or leave the field out where it is optional",
		"items[1].n: is null: give a value, or leave the field out where it is optional",
		"name: is null: give a value, or leave the field out where it is optional",
		"note: is null: give a value, or leave the field out where it is optional",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n  %q\nwant\n  %q", got, want)
	}
}

func TestReadFileRefusesWhatIsNotABoundedRegularFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 2049), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(small, 2048); err != nil || string(data) != `{"a":1}` {
		t.Fatalf("regular file: %q %v", data, err)
	}
	if data, err := ReadFile(link, 2048); err != nil || string(data) != `{"a":1}` {
		t.Fatalf("link to a regular file: %q %v", data, err)
	}
	for _, tc := range []struct {
		path, want string
		is         error
	}{
		{big, "big.json is larger than the 2 KiB limit", ErrTooLarge},
		{fifo, "fifo.json is a named pipe (FIFO), not a regular file", ErrNotRegular},
		{"/dev/zero", "/dev/zero is a character device, not a regular file", ErrNotRegular},
		{dir, "is a directory, not a regular file", ErrNotRegular},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			// GIVEN something that is not a small regular file WHEN read THEN the read is refused at once, naming
			// the file and the limit, instead of blocking on a FIFO or filling memory from a device.
			done := make(chan error, 1)
			go func() { _, err := ReadFile(tc.path, 2048); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) {
					t.Fatalf("err = %v, want one containing %q and wrapping %v", err, tc.want, tc.is)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ReadFile did not return within 10 s")
			}
		})
	}
	if _, err := ReadFile(filepath.Join(dir, "absent.json"), 2048); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("absent file: %v, want fs.ErrNotExist", err)
	}
	fsys := os.DirFS(dir)
	if _, err := ReadFileFS(fsys, "big.json", 2048); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadFileFS big: %v", err)
	}
	if _, err := ReadFileFS(fsys, "fifo.json", 2048); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("ReadFileFS fifo: %v", err)
	}
}

func TestDecodeChecksMapValues(t *testing.T) {
	// GIVEN a map of structs (the model catalog's prices by instance type) WHEN decoded strictly THEN an unknown,
	// missing or null member of a value is reported at path["key"], as in a struct.
	type byKey struct {
		M map[string]inner `json:"m"`
	}
	var d byKey
	got := Decode([]byte(`{"m":{"b":{"n":1,"x":2},"a":{},"c":null}}`), &d, "fix it", "one doc")
	want := []string{`m["a"].n: missing required field`, `m["b"].x: unknown field: fix it`, `m["c"]: is null: give a value, or leave the field out where it is optional`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Decode =\n  %q\nwant\n  %q", got, want)
	}
}
