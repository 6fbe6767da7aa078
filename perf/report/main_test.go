package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/perf/internal/row"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func fixture(n int, name string, smoke bool) row.Row {
	return row.Row{
		Schema: row.SchemaVersion, N: n, Name: name, Title: "Row " + name, Summary: "What is compared | how.", Smoke: smoke,
		Command: "go run ./perf/" + name, Date: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Duration: 42,
		Machine: row.Machine{NProc: 2, MemTotalBytes: 8 << 30, CPUModel: "Test CPU", OS: "linux", Arch: "amd64", GoVersion: "go1.26", FDLimit: 1024},
		Goals: []row.Goal{{Text: "rate >= 0.9x wrk", Measured: "0.95x", Verdict: row.Met},
			{Text: "p99 < 1 ms", Measured: "3 ms", Verdict: row.Missed, Why: "the client shares two cores with the server"}},
		Tables:  []row.Table{{Title: "Rates", Columns: []string{"C", "rps"}, Rows: [][]string{{"1", "100"}, {"10", "900"}}}},
		Figures: []row.Figure{{File: strings.TrimSuffix(row.FileName(n, name), ".json") + ".svg", Caption: "the chart"}},
		Fixed:   []string{"bench: a fix (abc123)"},
		Notes:   []string{"a note"},
	}
}

// writeRow writes r and its figure into dir.
func writeRow(t *testing.T, dir string, r row.Row) {
	t.Helper()
	if _, err := row.Write(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Figures {
		if err := os.WriteFile(filepath.Join(dir, f.File), []byte("<svg/>"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReportGolden(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	// Written out of order: the document has them in row order.
	writeRow(t, in, fixture(3, "container-overhead", true))
	writeRow(t, in, fixture(1, "load-engine", false))
	doc := filepath.Join(out, "BENCHMARKS.md")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-in", in, "-out", doc, "-require", "1,3"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "BENCHMARKS.golden.md")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("document differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
	for _, f := range []string{"1-load-engine.svg", "3-container-overhead.svg"} {
		if _, err := os.Stat(filepath.Join(out, "benchmarks", f)); err != nil {
			t.Errorf("figure %s not copied: %v", f, err)
		}
	}
}

func TestReportRefuses(t *testing.T) {
	cases := map[string]struct {
		setup func(t *testing.T, in string)
		args  []string
		want  string
		usage bool
	}{
		"required row missing": {func(t *testing.T, in string) { writeRow(t, in, fixture(1, "load-engine", false)) },
			[]string{"-require", "1,2"}, "row 2 missing", false},
		"empty directory": {func(t *testing.T, in string) {}, nil, "no row file", false},
		"invalid row file": {func(t *testing.T, in string) {
			os.WriteFile(filepath.Join(in, "1-load-engine.json"), []byte(`{"schema":1}`), 0o644)
		}, nil, "1-load-engine.json", false},
		"two files of one row": {func(t *testing.T, in string) {
			writeRow(t, in, fixture(1, "load-engine", false))
			writeRow(t, in, fixture(1, "old-name", false))
		}, nil, "two files", false},
		"figure missing": {func(t *testing.T, in string) {
			r := fixture(1, "load-engine", false)
			if _, err := row.Write(in, r); err != nil {
				t.Fatal(err)
			}
		}, nil, "figure 1-load-engine.svg", false},
		"bad require":    {func(t *testing.T, in string) {}, []string{"-require", "1,x"}, "-require", true},
		"extra argument": {func(t *testing.T, in string) {}, []string{"now"}, "unexpected argument", true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in, out := t.TempDir(), t.TempDir()
			c.setup(t, in)
			doc := filepath.Join(out, "BENCHMARKS.md")
			var stdout, stderr bytes.Buffer
			err := run(append([]string{"-in", in, "-out", doc}, c.args...), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("run = %v, want an error naming %q", err, c.want)
			}
			if usage := exitcode.Code(err) == exitcode.CodeUsage; usage != c.usage {
				t.Errorf("usage error (exit %d) = %v, want %v", exitcode.Code(err), usage, c.usage)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("wrote %v on error", entries)
			}
		})
	}
}

// The document carries no issue numbers: a parenthetical or leading citation is dropped, the fact around it
// stays, and a citation that cannot be dropped fails the report, naming the row.
func TestReportDropsIssueReferences(t *testing.T) {
	// № stands for the word "issue" in these inputs, so that this file itself cites no issue number.
	cite := strings.NewReplacer("№", "issue").Replace
	in, out := t.TempDir(), t.TempDir()
	r := fixture(1, "load-engine", false)
	r.Goals[0].Text = cite("rate >= 0.9x wrk (№ 15)")
	r.Tables[0].Title = cite("calibration: 100 ms a segment, one worker (№ 17's set-up)")
	r.Fixed = []string{cite("№ 22 item 6: bench: a fix (abc123)")}
	r.Notes = []string{cite("The engine runs with one worker (№ 17's set-up), so its two rows are one configuration (№ 22, item 6).")}
	writeRow(t, in, r)
	doc := filepath.Join(out, "BENCHMARKS.md")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-in", in, "-out", doc}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if issueRef.Match(got) {
		t.Errorf("the document still cites an issue:\n%s", got)
	}
	for _, want := range []string{"| rate >= 0.9x wrk | 0.95x |", "**calibration: 100 ms a segment, one worker**",
		"- bench: a fix (abc123)", "- The engine runs with one worker, so its two rows are one configuration."} {
		if !strings.Contains(string(got), want) {
			t.Errorf("document lacks %q:\n%s", want, got)
		}
	}

	// A reference in running text cannot be dropped without losing the sentence: refused, nothing written.
	in, out = t.TempDir(), t.TempDir()
	r = fixture(1, "load-engine", false)
	r.Summary = cite("Measured as № 15 asks.")
	writeRow(t, in, r)
	doc = filepath.Join(out, "BENCHMARKS.md")
	err = run([]string{"-in", in, "-out", doc}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "row 1") || !strings.Contains(err.Error(), "summary") {
		t.Fatalf("run = %v, want an error naming row 1's summary", err)
	}
	if _, err := os.Stat(doc); !os.IsNotExist(err) {
		t.Errorf("wrote %s on error (stat: %v)", doc, err)
	}
}

// With -keep, a row measured again replaces its own lines, and every other row stays as the document stated
// it: the document written from rows 1, 2 and 3, with row 2 alone written again, equals the document written
// from 1, 3 and the new 2 together.
func TestReportKeepsTheRowsWithoutFiles(t *testing.T) {
	first, again, all, out := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	r1, r2, r3 := fixture(1, "load-engine", false), fixture(2, "schedulers", false), fixture(3, "container-overhead", true)
	for _, r := range []row.Row{r1, r2, r3} {
		writeRow(t, first, r)
	}
	doc := filepath.Join(out, "BENCHMARKS.md")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-in", first, "-out", doc}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	r2.Goals[0].Measured, r2.Tables[0].Rows[0][1] = "1.25x", "125"
	writeRow(t, again, r2)
	if err := run([]string{"-in", again, "-out", doc, "-keep", "-require", "2"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []row.Row{r1, r2, r3} {
		writeRow(t, all, r)
	}
	want := filepath.Join(out, "want.md")
	if err := run([]string{"-in", all, "-out", want, "-figures", filepath.Join(out, "benchmarks")}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	wb, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wb) {
		t.Errorf("-keep gave\n%s\nwant\n%s", got, wb)
	}
	if !strings.Contains(string(got), "1.25x") || strings.Count(string(got), "## 2. ") != 1 {
		t.Errorf("row 2 was not replaced by its new file:\n%s", got)
	}
	// Without -keep the other rows are gone; with -keep on a document this command did not write, it refuses.
	if err := os.WriteFile(doc, []byte("# Benchmarks\n\n## 1. Row load-engine\n\ntext\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = run([]string{"-in", again, "-out", doc, "-keep"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "row 1 has a section but no line in the summary table") {
		t.Errorf("-keep on a foreign document: %v, want a refusal naming row 1", err)
	}
}
