package row

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sample() Row {
	return Row{
		Schema: SchemaVersion, N: 1, Name: "load-engine", Title: "Load engine vs wrk", Command: "go run ./perf/loadengine",
		Machine: CurrentMachine(), Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Duration: Of(1500 * time.Millisecond),
		Goals:   []Goal{{Text: "rate >= 0.9x wrk", Measured: "0.95x", Verdict: Met}},
		Tables:  []Table{{Title: "rates", Columns: []string{"C", "rps"}, Rows: [][]string{{"1", "100"}}}},
		Figures: []Figure{{File: "1-load-engine-rate.svg", Caption: "rate"}},
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p, err := Write(dir, sample())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(p) != "1-load-engine.json" {
		t.Fatalf("path %s", p)
	}
	got, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Goals[0].Verdict != Met || got.Tables[0].Rows[0][1] != "100" || got.Duration != 1.5 || got.Fixed == nil {
		t.Fatalf("round trip: %+v", got)
	}
	if got.Machine.NProc < 1 || got.Machine.MemTotalBytes <= 0 {
		t.Fatalf("machine not described: %+v", got.Machine)
	}
}

func TestWriteRefusesInvalid(t *testing.T) {
	r := sample()
	r.Goals[0].Verdict = Missed // without why
	r.Tables[0].Rows[0] = []string{"1"}
	r.Figures[0].File = "../x.svg"
	dir := t.TempDir()
	_, err := Write(dir, r)
	if err == nil {
		t.Fatal("invalid row written")
	}
	for _, want := range []string{"goals[0].why", "tables[0].rows[0]", "figures[0].file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("partial write: %v", entries)
	}
}

func TestReadRefuses(t *testing.T) {
	dir := t.TempDir()
	p, err := Write(dir, sample())
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	cases := map[string]struct{ file, body, want string }{
		"unknown key":  {"1-load-engine.json", strings.Replace(string(data), `"schema"`, `"extra": 1, "schema"`, 1), "extra"},
		"missing key":  {"1-load-engine.json", strings.Replace(string(data), `"title": "Load engine vs wrk",`, "", 1), "title"},
		"wrong name":   {"2-load-engine.json", string(data), "1-load-engine.json"},
		"old schema":   {"1-load-engine.json", strings.Replace(string(data), `"schema": 1`, `"schema": 0`, 1), "schema"},
		"not json":     {"1-load-engine.json", "{", "not valid JSON"},
		"null verdict": {"1-load-engine.json", strings.Replace(string(data), `"verdict": "met"`, `"verdict": null`, 1), "verdict"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			f := filepath.Join(d, c.file)
			if err := os.WriteFile(f, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(f)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Read = %v, want an error naming %q", err, c.want)
			}
		})
	}
}
