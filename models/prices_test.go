package models

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/speech-infra/speech-infra/internal/exitcode"
)

func TestCatalogPricesEveryModelsOwnType(t *testing.T) {
	// GIVEN the built-in catalog WHEN each model's own instance type is looked up THEN it has a price with a
	// source and a date, and ResolvePrice names models/<id>.json, the source and the date.
	cat, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range cat.IDs() {
		m, _ := cat.Get(id)
		p, ok := m.PriceFor(m.InstanceType)
		if !ok || !(p.USDPerHour > 0) || p.Source == "" || p.Date == "" {
			t.Errorf("%s: price of its own type %s = %+v, %v", id, m.InstanceType, p, ok)
			continue
		}
		usd, src, err := m.ResolvePrice(m.InstanceType, nil)
		want := "catalog models/" + id + ".json, " + p.Source + ", " + p.Date
		if err != nil || usd != p.USDPerHour || src != want {
			t.Errorf("%s: ResolvePrice = %v, %q, %v; want %v, %q", id, usd, src, err, p.USDPerHour, want)
		}
	}
	k, _ := cat.Get("kokoro-82m")
	if p, _ := k.PriceFor("ml.g5.xlarge"); p.USDPerHour != 1.408 {
		t.Errorf("kokoro-82m on ml.g5.xlarge: %+v, want the 1.408 the catalog has carried since commit ed9dcda", p)
	}
	// A twin stands for its original on the same hardware: the same prices, or a comparison of the twin's
	// types would be priced unlike the original's.
	for _, id := range cat.IDs() {
		m, _ := cat.Get(id)
		if m.Twin == nil {
			continue
		}
		of, err := cat.Get(m.Twin.Of)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m.Prices, of.Prices) {
			t.Errorf("%s prices %v, its original %s %v", id, m.Prices, of.ID, of.Prices)
		}
	}
	e, _ := cat.Get("espeak-ng")
	if p, _ := e.PriceFor("ml.c5.large"); p.USDPerHour != 0.119 {
		t.Errorf("espeak-ng on ml.c5.large: %+v, want 0.119", p)
	}
}

func TestCatalogPathNamesTheDirectory(t *testing.T) {
	// GIVEN a --catalog directory WHEN a model is priced from it THEN the source names that directory's file,
	// not the built-in models/.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m1.json"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	UseDir(dir)
	defer UseDir("")
	cat, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Get("m1")
	_, src, err := m.ResolvePrice("ml.c5.large", nil)
	if want := "catalog " + filepath.Join(dir, "m1.json") + ", a test figure, 2026-11-30"; err != nil || src != want {
		t.Errorf("source = %q, %v; want %q", src, err, want)
	}
}

func TestPriceValidation(t *testing.T) {
	withPrices := func(prices string) func(string) string {
		return func(s string) string {
			return strings.Replace(s, `"prices":{"ml.c5.large":{"usd_per_hour":0.119,"source":"a test figure","date":"2026-11-30"}}`, `"prices":`+prices, 1)
		}
	}
	const ok = `"ml.c5.large":{"usd_per_hour":0.119,"source":"s","date":"2026-11-30"}`
	cases := []struct {
		name  string
		edit  func(string) string
		wants []string
	}{
		{"several types", withPrices(`{` + ok + `,"ml.c5.xlarge":{"usd_per_hour":0.238,"source":"s","date":"2026-12-01"}}`), nil},
		{"the old single price says what replaced it", func(s string) string {
			return strings.Replace(s, `"prices":{"ml.c5.large":{"usd_per_hour":0.119,"source":"a test figure","date":"2026-11-30"}}`, `"price_per_hour_usd":0.119`, 1)
		}, []string{"m1.json: price_per_hour_usd: was replaced by prices, one entry per instance type", `"usd_per_hour": <the old figure>`, "m1.json: prices: missing required field"}},
		{"own type unpriced", withPrices(`{"ml.c5.xlarge":{"usd_per_hour":0.238,"source":"s","date":"2026-12-01"}}`),
			[]string{`m1.json: prices: has no entry for the catalog's instance_type ml.c5.large: add "ml.c5.large"`}},
		{"empty table", withPrices(`{}`), []string{"m1.json: prices: has no entry for the catalog's instance_type ml.c5.large"}},
		{"zero price", withPrices(`{"ml.c5.large":{"usd_per_hour":0,"source":"s","date":"2026-11-30"}}`),
			[]string{`m1.json: prices["ml.c5.large"].usd_per_hour: is 0: use the on-demand price of one instance-hour in US dollars, more than 0 and at most 1000`}},
		{"negative price", withPrices(`{` + ok + `,"ml.g6.xlarge":{"usd_per_hour":-1,"source":"s","date":"2026-11-30"}}`),
			[]string{`m1.json: prices["ml.g6.xlarge"].usd_per_hour: is -1`}},
		{"price above the bound", withPrices(`{"ml.c5.large":{"usd_per_hour":1000.5,"source":"s","date":"2026-11-30"}}`),
			[]string{`prices["ml.c5.large"].usd_per_hour: is 1000.5`}},
		{"bad date", withPrices(`{"ml.c5.large":{"usd_per_hour":0.119,"source":"s","date":"30/11/2026"}}`),
			[]string{`m1.json: prices["ml.c5.large"].date: "30/11/2026" is not a date: use YYYY-MM-DD`}},
		{"impossible date", withPrices(`{"ml.c5.large":{"usd_per_hour":0.119,"source":"s","date":"2026-02-30"}}`),
			[]string{`prices["ml.c5.large"].date: "2026-02-30" is not a date`}},
		{"blank source", withPrices(`{"ml.c5.large":{"usd_per_hour":0.119,"source":"  ","date":"2026-11-30"}}`),
			[]string{`m1.json: prices["ml.c5.large"].source: is empty: say where the figure comes from`}},
		{"key not an instance type", withPrices(`{` + ok + `,"g6.xlarge":{"usd_per_hour":1,"source":"s","date":"2026-11-30"}}`),
			[]string{`m1.json: prices["g6.xlarge"]: "g6.xlarge" is not a SageMaker instance type: key each price by a name like ml.g5.xlarge`}},
		{"local is no key", withPrices(`{` + ok + `,"local":{"usd_per_hour":1,"source":"s","date":"2026-11-30"}}`),
			[]string{`prices["local"]: "local" is not a SageMaker instance type`}},
		{"missing date and unknown member", withPrices(`{"ml.c5.large":{"usd_per_hour":0.119,"source":"s","region":"us-east-1"}}`),
			[]string{`m1.json: prices["ml.c5.large"].date: missing required field`, `m1.json: prices["ml.c5.large"].region: unknown field`}},
		{"null entry", withPrices(`{` + ok + `,"ml.c5.xlarge":null}`), []string{`m1.json: prices["ml.c5.xlarge"]: is null`}},
		{"price as a string", withPrices(`{"ml.c5.large":{"usd_per_hour":"0.119","source":"s","date":"2026-11-30"}}`),
			[]string{"has JSON type string, want float64"}},
		{"a type priced twice", withPrices(`{` + ok + `,` + ok + `}`), []string{`duplicate key: "ml.c5.large" appears more than once`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// GIVEN a catalog file with an edited prices table WHEN it loads THEN every problem names the field
			// (prices["type"].member) and the fix.
			_, err := Load(fstest.MapFS{"m1.json": {Data: []byte(tc.edit(good))}})
			if len(tc.wants) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error containing %q, got none", tc.wants)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParsePriceOverrides(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		def    string
		want   map[string]float64
		errs   []string
	}{
		{"bare price is the default type", []string{"1.2"}, "ml.g5.xlarge", map[string]float64{"ml.g5.xlarge": 1.2}, nil},
		{"typed prices", []string{"ml.g5.xlarge=1.2", " ml.g6.xlarge = 0.9 "}, "ml.g5.xlarge", map[string]float64{"ml.g5.xlarge": 1.2, "ml.g6.xlarge": 0.9}, nil},
		{"none", nil, "ml.g5.xlarge", map[string]float64{}, nil},
		{"bare and typed for the same type", []string{"1.2", "ml.g5.xlarge=1.3"}, "ml.g5.xlarge", nil,
			[]string{`--price-per-hour "ml.g5.xlarge=1.3": ml.g5.xlarge is priced twice (1.2 before): give one price per instance type`}},
		{"not a number", []string{"ml.g5.xlarge=cheap"}, "ml.g5.xlarge", nil,
			[]string{`--price-per-hour "ml.g5.xlarge=cheap": "cheap" is not a number of US dollars: use --price-per-hour TYPE=USD`}},
		{"NaN and infinity", []string{"NaN", "ml.g6.xlarge=+Inf"}, "ml.g5.xlarge", nil,
			[]string{`--price-per-hour "NaN": "NaN" is not a number`, `--price-per-hour "ml.g6.xlarge=+Inf": "+Inf" is not a number`}},
		{"negative and zero", []string{"-1", "ml.g6.xlarge=0"}, "ml.g5.xlarge", nil,
			[]string{`--price-per-hour "-1": -1 is out of range: want more than 0 and at most 1000`, `--price-per-hour "ml.g6.xlarge=0": 0 is out of range`}},
		{"above the bound", []string{"1e9"}, "ml.g5.xlarge", nil, []string{`--price-per-hour "1e9": 1e+09 is out of range`}},
		{"not an instance type", []string{"g5.xlarge=1.2", "=1"}, "ml.g5.xlarge", nil,
			[]string{`--price-per-hour "g5.xlarge=1.2": "g5.xlarge" is not a SageMaker instance type: use --price-per-hour TYPE=USD`, `--price-per-hour "=1": "" is not a SageMaker instance type`}},
		{"bare price without a default type", []string{"1.2"}, "", nil, []string{`--price-per-hour "1.2": a bare price needs an instance type`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// GIVEN --price-per-hour values WHEN parsed THEN each TYPE=USD or bare USD lands on its type, and
			// every bad value is a usage error naming it and the form to use.
			got, err := ParsePriceOverrides(tc.values, tc.def)
			if len(tc.errs) == 0 {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("ParsePriceOverrides(%q) = %v, %v; want %v", tc.values, got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParsePriceOverrides(%q) = %v, want an error", tc.values, got)
			}
			if exitcode.Code(err) != exitcode.CodeUsage {
				t.Errorf("exit code %d, want the usage error's %d", exitcode.Code(err), exitcode.CodeUsage)
			}
			for _, w := range tc.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestResolvePrice(t *testing.T) {
	m, probs := Parse("m1.json", []byte(strings.Replace(good, `"prices":{"ml.c5.large":{"usd_per_hour":0.119,"source":"a test figure","date":"2026-11-30"}}`,
		`"prices":{"ml.c5.large":{"usd_per_hour":0.119,"source":"page A, us-east-1","date":"2026-11-30"},"ml.m5.large":{"usd_per_hour":0.115,"source":"page B, us-east-1","date":"2026-07-30"}}`, 1)))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	over := map[string]float64{"ml.m5.large": 0.2, "ml.c5.xlarge": 0.25}
	cases := []struct {
		name, typ string
		over      map[string]float64
		usd       float64
		src       string
		err       []string
	}{
		{"catalog entry", "ml.c5.large", over, 0.119, "catalog m1.json, page A, us-east-1, 2026-11-30", nil},
		{"override first", "ml.m5.large", over, 0.2, "--price-per-hour", nil},
		{"override of a type the catalog lacks", "ml.c5.xlarge", over, 0.25, "--price-per-hour", nil},
		{"local is the catalog's own type", LocalInstanceType, nil, 0.119,
			"catalog m1.json, page A, us-east-1, 2026-11-30 (the local emulator run priced as the catalog's instance type ml.c5.large)", nil},
		{"local with the own type overridden", LocalInstanceType, map[string]float64{"ml.c5.large": 0.3}, 0.3,
			"--price-per-hour (the local emulator run priced as the catalog's instance type ml.c5.large)", nil},
		{"local priced by a bare value", LocalInstanceType, map[string]float64{LocalInstanceType: 0.4}, 0.4, "--price-per-hour (for the local emulator run)", nil},
		{"a type without a price", "ml.g6.xlarge", over, 0, "",
			[]string{"no price for instance type ml.g6.xlarge of model m1: the catalog m1.json prices ml.c5.large, ml.m5.large; pass --price-per-hour ml.g6.xlarge=USD", `or add "ml.g6.xlarge" to the prices of m1.json`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// GIVEN a model priced for two types and some overrides WHEN a type is priced THEN the override wins,
			// then the catalog, and a type with neither is refused naming --price-per-hour TYPE=USD.
			usd, src, err := m.ResolvePrice(tc.typ, tc.over)
			if len(tc.err) == 0 {
				if err != nil || usd != tc.usd || src != tc.src {
					t.Errorf("ResolvePrice(%s) = %v, %q, %v; want %v, %q", tc.typ, usd, src, err, tc.usd, tc.src)
				}
				return
			}
			if err == nil || exitcode.Code(err) != exitcode.CodeUsage {
				t.Fatalf("ResolvePrice(%s) = %v, %q, %v; want a usage error", tc.typ, usd, src, err)
			}
			for _, w := range tc.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// A bare --price-per-hour stands for the priced type, or for the catalog's type on the emulator; TYPE=USD for
// TYPE; the catalog prices the rest.
func TestPriceOf(t *testing.T) {
	cat, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("kokoro-82m")
	if err != nil {
		t.Fatal(err)
	}
	if usd, _, err := m.PriceOf("ml.g6.xlarge", []string{"2.5"}); err != nil || usd != 2.5 {
		t.Errorf("a bare price for ml.g6.xlarge: %v, %v", usd, err)
	}
	if usd, _, err := m.PriceOf(LocalInstanceType, []string{"3"}); err != nil || usd != 3 {
		t.Errorf("a bare price on the emulator: %v, %v", usd, err)
	}
	want, _ := m.PriceFor(m.InstanceType)
	if usd, src, err := m.PriceOf(m.InstanceType, []string{"ml.g6.xlarge=9"}); err != nil || usd != want.USDPerHour || !strings.HasPrefix(src, "catalog ") {
		t.Errorf("another type's price: %v, %q, %v; want the catalog's %v", usd, src, err, want.USDPerHour)
	}
	if _, _, err := m.PriceOf(m.InstanceType, []string{"x"}); err == nil {
		t.Error("a price that is not one: no error")
	}
}
