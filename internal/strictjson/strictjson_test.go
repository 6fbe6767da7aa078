package strictjson

import (
	"reflect"
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
