package strictjson

import (
	"reflect"
	"strings"
	"testing"
)

type typedInner struct {
	Desired int               `json:"desired"`
	Env     map[string]string `json:"env"`
}

type typedDoc struct {
	Endpoints map[string]typedInner `json:"endpoints"`
	List      []typedInner          `json:"list"`
}

// DuplicateKeysFor folds case only where encoding/json would: in a struct's members, not in a map's keys.
func TestDuplicateKeysFor(t *testing.T) {
	typ := reflect.TypeOf(&typedDoc{})
	for _, tc := range []struct{ doc, want string }{
		{`{"endpoints":{"e":{"desired":1,"Desired":3}}}`, `endpoints.e.Desired: duplicate key: "Desired" differs from "desired" only in case`},
		{`{"endpoints":{"e":{"desired":1,"desir\u0065d":3}}}`, `endpoints.e.desired: duplicate key: "desired" appears more than once`},
		{`{"list":[{"desired":1},{"desired":1,"DESIRED":2}]}`, `list[1].DESIRED: duplicate key`},
		{`{"endpoints":{"e":{},"e":{}}}`, `endpoints.e: duplicate key`},
		{`{"Endpoints":{},"endpoints":{}}`, `endpoints: duplicate key: "endpoints" differs from "Endpoints" only in case`},
	} {
		got := strings.Join(DuplicateKeysFor([]byte(tc.doc), typ), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.doc, got, tc.want)
		}
	}
	for _, ok := range []string{
		`{"endpoints":{"e":{"desired":1},"E":{"desired":2}}}`,            // map keys are data
		`{"endpoints":{"e":{"env":{"PATH":"1","Path":"2","path":"3"}}}}`, // an environment may hold all three
	} {
		if got := DuplicateKeysFor([]byte(ok), typ); len(got) > 0 {
			t.Errorf("%s: %q, want no duplicate", ok, got)
		}
	}
}
