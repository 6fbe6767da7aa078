// Command report assembles BENCHMARKS.md from the benchmark rows: it reads every row file
// (<n>-<name>.json, perf/internal/row) of a directory strictly, copies each row's SVG charts next to
// the document, and writes the document atomically, rows in their fixed order, each with its title, figures,
// goals and whether they are met, what was fixed, the command that reproduces it, the machine and the date.
// The document states facts and rules, not the issue tracker's numbers: a row's references to an issue are
// dropped (withoutIssueRefs), and one that cannot be dropped fails the report, naming the row.
//
//	go run ./perf/report [-in .cache/bench] [-out BENCHMARKS.md] [-figures benchmarks] [-require 1,2,3,4,5,6] [-keep]
//
// With -keep, a row that has no file in -in keeps what the document at -out says of it (its lines of the
// summary table and its section, verbatim), so that one row can be measured again without the others: row 2
// alone takes 40 minutes at full size.
//
// Exit status 2 for a usage error, 1 when a row file is invalid, a required row or a figure is missing.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/perf/internal/row"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed, exit 0
		}
		os.Exit(exitcode.Report(os.Stderr, "report", err))
	}
}

type options struct {
	in, out, figures string
	require          []int
	keep             bool
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var require string
	fs.StringVar(&o.in, "in", row.DefaultDir, "directory of the row files and their charts")
	fs.StringVar(&o.out, "out", "BENCHMARKS.md", "the document to write")
	fs.StringVar(&o.figures, "figures", "", "directory the charts are copied to (default: benchmarks/ next to -out)")
	fs.StringVar(&require, "require", "", "rows that must be present, comma-separated (e.g. 1,2,3,4,5,6)")
	fs.BoolVar(&o.keep, "keep", false, "keep the rows that have no file in -in as the document at -out states them (measure one row again without the others)")
	if err := fs.Parse(args); err != nil {
		return o, exitcode.Usage(err)
	}
	if fs.NArg() > 0 {
		return o, exitcode.Usage(fmt.Errorf("unexpected argument %q: every option is a flag", fs.Arg(0)))
	}
	var errs []error
	if require != "" {
		for _, f := range strings.Split(require, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 99 {
				errs = append(errs, fmt.Errorf("-require: %q: want row numbers 1 to 99, comma-separated", f))
				continue
			}
			o.require = append(o.require, n)
		}
	}
	if o.out == "" {
		errs = append(errs, errors.New("-out: is empty: give the document's path, e.g. BENCHMARKS.md"))
	}
	if o.figures == "" {
		o.figures = filepath.Join(filepath.Dir(o.out), "benchmarks")
	}
	if len(errs) > 0 {
		return o, exitcode.Usage(errors.Join(errs...))
	}
	return o, nil
}

var rowFileRE = regexp.MustCompile(`^[0-9]+-[a-z0-9-]+\.json$`)

// loadRows reads every row file of dir, refusing two files of the same row number.
func loadRows(dir string) ([]row.Row, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read the row directory: %w: run the row programs first (perf/ROWS.md)", err)
	}
	var rows []row.Row
	var errs []error
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !rowFileRE.MatchString(e.Name()) {
			continue
		}
		r, err := row.Read(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, ok := seen[r.N]; ok {
			errs = append(errs, fmt.Errorf("row %d: two files, %s and %s: remove the stale one", r.N, prev, e.Name()))
			continue
		}
		seen[r.N] = e.Name()
		rows = append(rows, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].N < rows[j].N })
	return rows, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	rows, err := loadRows(o.in)
	if err != nil {
		return err
	}
	for i := range rows {
		if err := withoutIssueRefs(&rows[i]); err != nil {
			return err
		}
	}
	var missing []string
	for _, n := range o.require {
		found := false
		for _, r := range rows {
			found = found || r.N == n
		}
		if !found {
			missing = append(missing, strconv.Itoa(n))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("row %s missing from %s: run its program (perf/ROWS.md)", strings.Join(missing, ", "), o.in)
	}
	if len(rows) == 0 {
		return fmt.Errorf("no row file in %s: run the row programs first (perf/ROWS.md)", o.in)
	}
	var kept map[int]keptRow
	if o.keep {
		old, err := os.ReadFile(o.out)
		if err != nil {
			return fmt.Errorf("-keep: read the document whose other rows are kept: %w", err)
		}
		if kept, err = keptRows(string(old)); err != nil {
			return fmt.Errorf("-keep: %s: %w", o.out, err)
		}
		for _, r := range rows {
			delete(kept, r.N)
		}
	}
	// Read every figure before writing anything, so a missing one leaves the document as it was.
	figs := map[string][]byte{}
	for _, r := range rows {
		for _, f := range r.Figures {
			data, err := os.ReadFile(filepath.Join(o.in, f.File))
			if err != nil {
				return fmt.Errorf("row %d: figure %s: %w: rerun `%s`", r.N, f.File, err, r.Command)
			}
			figs[f.File] = data
		}
	}
	rel, err := filepath.Rel(filepath.Dir(o.out), o.figures)
	if err != nil {
		return fmt.Errorf("-figures: %w", err)
	}
	if len(figs) > 0 {
		if err := os.MkdirAll(o.figures, 0o755); err != nil {
			return fmt.Errorf("create the figure directory: %w", err)
		}
		for name, data := range figs {
			if err := atomicfile.WriteFile(filepath.Join(o.figures, name), data, 0o644); err != nil {
				return err
			}
		}
	}
	if err := atomicfile.WriteFile(o.out, []byte(render(rows, kept, filepath.ToSlash(rel))), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(stdout, o.out)
	return nil
}

func verdictMark(v string) string {
	switch v {
	case row.Met:
		return "✅ met"
	case row.Missed:
		return "❌ missed"
	}
	return "⚠️ not measured"
}

func gib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64) + " GiB" }

// cell escapes a table cell.
func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

// keptRow is what a document says of one row: its lines of the summary table and its section, verbatim.
type keptRow struct {
	summary, section string
}

var (
	summaryLineRE = regexp.MustCompile(`^\| \[([0-9]+)\. `)
	sectionRE     = regexp.MustCompile(`^## ([0-9]+)\. `)
)

// keptRows splits a document render wrote into its rows: the summary table's lines from a row's first ("| [N.
// title](#...) |") to the next row's, and the section from "## N. " to the next "## ". A row with no section,
// or a section with no summary line, is an error: the document was not written by this command.
func keptRows(doc string) (map[int]keptRow, error) {
	out := map[int]keptRow{}
	lines := strings.SplitAfter(doc, "\n")
	cur, inTable := 0, false
	var sum, sec strings.Builder
	flushSum := func() {
		if cur > 0 {
			k := out[cur]
			k.summary = sum.String()
			out[cur] = k
		}
		sum.Reset()
	}
	for _, l := range lines {
		if m := summaryLineRE.FindStringSubmatch(l); m != nil {
			flushSum()
			cur, inTable = atoiOK(m[1]), true
		}
		if inTable {
			if !strings.HasPrefix(l, "|") {
				flushSum()
				inTable, cur = false, 0
				continue
			}
			if cur > 0 {
				sum.WriteString(l)
			}
		}
	}
	cur = 0
	flushSec := func() {
		if cur > 0 {
			k := out[cur]
			k.section = sec.String()
			out[cur] = k
		}
		sec.Reset()
	}
	for _, l := range lines {
		if m := sectionRE.FindStringSubmatch(l); m != nil {
			flushSec()
			cur = atoiOK(m[1])
		} else if strings.HasPrefix(l, "## ") {
			flushSec()
			cur = 0
		}
		if cur > 0 {
			sec.WriteString(l)
		}
	}
	flushSec()
	for n, k := range out {
		switch {
		case k.summary == "":
			return nil, fmt.Errorf("row %d has a section but no line in the summary table", n)
		case k.section == "":
			return nil, fmt.Errorf("row %d has a line in the summary table but no section", n)
		}
	}
	return out, nil
}

func atoiOK(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// render is the document: a summary table, then one section per row. figDir is the figures' directory
// relative to the document. kept are rows with no file, as an earlier document stated them: they take their
// place in the row order, verbatim.
func render(rows []row.Row, kept map[int]keptRow, figDir string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	order := map[int]*row.Row{}
	var ns []int
	for i := range rows {
		order[rows[i].N] = &rows[i]
		ns = append(ns, rows[i].N)
	}
	for n := range kept {
		if order[n] == nil {
			ns = append(ns, n)
		}
	}
	sort.Ints(ns)
	p("# Benchmarks\n\n")
	p("Generated by `go run ./perf/report` from the row files the `make bench` programs write (perf/ROWS.md). ")
	p("These machines are shared and noisy: every claim is a ratio or a difference measured side by side in the same run, not an absolute time.\n\n")
	p("| row | goal | measured | verdict |\n|---|---|---|---|\n")
	for _, n := range ns {
		r := order[n]
		if r == nil {
			b.WriteString(kept[n].summary)
			continue
		}
		title := fmt.Sprintf("[%d. %s](#%s)", r.N, cell(r.Title), anchor(*r))
		if len(r.Goals) == 0 {
			p("| %s | (figures only) | | |\n", title)
		}
		for i, g := range r.Goals {
			t := title
			if i > 0 {
				t = ""
			}
			p("| %s | %s | %s | %s |\n", t, cell(g.Text), cell(g.Measured), verdictMark(g.Verdict))
		}
	}
	p("\n")
	for _, n := range ns {
		r := order[n]
		if r == nil {
			b.WriteString(kept[n].section)
			continue
		}
		p("## %d. %s\n\n", r.N, r.Title)
		if r.Smoke {
			p("> **Smoke run** (smallest size): these figures only show that the program works; run `%s` without `-smoke` for the real figures.\n\n", strings.TrimSuffix(r.Command, " -smoke"))
		}
		if r.Summary != "" {
			p("%s\n\n", r.Summary)
		}
		for _, f := range r.Figures {
			p("![%s](%s/%s)\n\n", f.Caption, figDir, f.File)
		}
		if len(r.Goals) > 0 {
			p("**Goals**\n\n")
			for _, g := range r.Goals {
				p("- %s: %s", verdictMark(g.Verdict), g.Text)
				if g.Measured != "" {
					p(" — measured %s", g.Measured)
				}
				if g.Why != "" {
					p(". Why: %s", g.Why)
				}
				p("\n")
			}
			p("\n")
		}
		for _, t := range r.Tables {
			if t.Title != "" {
				p("**%s**\n\n", t.Title)
			}
			p("| %s |\n|%s\n", strings.Join(mapCells(t.Columns), " | "), strings.Repeat("---|", len(t.Columns)))
			for _, rr := range t.Rows {
				p("| %s |\n", strings.Join(mapCells(rr), " | "))
			}
			p("\n")
		}
		p("**Fixed because of this row:** ")
		if len(r.Fixed) == 0 {
			p("nothing.\n\n")
		} else {
			p("\n\n")
			for _, f := range r.Fixed {
				p("- %s\n", f)
			}
			p("\n")
		}
		for _, n := range r.Notes {
			p("- %s\n", n)
		}
		if len(r.Notes) > 0 {
			p("\n")
		}
		m := r.Machine
		p("Reproduce: `%s` · machine: nproc %d, memory %s", r.Command, m.NProc, gib(m.MemTotalBytes))
		if m.CPUModel != "" {
			p(", %s", m.CPUModel)
		}
		p(", %s/%s, %s · date %s · took %.0f s\n\n", m.OS, m.Arch, m.GoVersion, r.Date.UTC().Format("2006-01-02 15:04 UTC"), float64(r.Duration))
	}
	return b.String()
}

func mapCells(cs []string) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = cell(c)
	}
	return out
}

// anchor is GitHub's heading anchor of the row's section.
func anchor(r row.Row) string {
	h := strings.ToLower(fmt.Sprintf("%d. %s", r.N, r.Title))
	var b strings.Builder
	for _, c := range h {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteRune(c)
		case c == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// issueParen is a parenthetical that only cites the issue tracker, N and M standing for numbers: " (issue N)",
// " (issue N's set-up)", " (issue N, item M)". The text around it states the fact; the number only says where
// it was asked for.
var issueParen = regexp.MustCompile(`\s*\(issues? [0-9][^()]*\)`)

// issueLead is a leading citation, as a "Fixed" entry copied from a commit message has: "issue N item M: ".
var issueLead = regexp.MustCompile(`^issues? [0-9]+(?:,? items? [0-9]+)?:\s*`)

// issueRef is any reference to an issue left after those are dropped.
var issueRef = regexp.MustCompile(`(?i)\bissues? #?[0-9]`)

// withoutIssueRefs drops r's references to the issue tracker from every text the document shows, and
// refuses a reference it cannot drop, naming the row and the text, so the row's program can state the rule
// instead.
func withoutIssueRefs(r *row.Row) error {
	var left []string
	fix := func(where string, s *string) {
		*s = issueLead.ReplaceAllString(issueParen.ReplaceAllString(*s, ""), "")
		if issueRef.MatchString(*s) {
			left = append(left, fmt.Sprintf("%s %q", where, *s))
		}
	}
	fix("title", &r.Title)
	fix("summary", &r.Summary)
	for i := range r.Goals {
		g := &r.Goals[i]
		fix(fmt.Sprintf("goal %d", i+1), &g.Text)
		fix(fmt.Sprintf("goal %d's measured", i+1), &g.Measured)
		fix(fmt.Sprintf("goal %d's why", i+1), &g.Why)
	}
	for i := range r.Tables {
		t := &r.Tables[i]
		fix(fmt.Sprintf("table %d's title", i+1), &t.Title)
		for j := range t.Columns {
			fix(fmt.Sprintf("table %d's column %d", i+1, j+1), &t.Columns[j])
		}
		for j := range t.Rows {
			for k := range t.Rows[j] {
				fix(fmt.Sprintf("table %d's row %d", i+1, j+1), &t.Rows[j][k])
			}
		}
	}
	for i := range r.Figures {
		fix(fmt.Sprintf("figure %d's caption", i+1), &r.Figures[i].Caption)
	}
	for i := range r.Fixed {
		fix(fmt.Sprintf("fixed %d", i+1), &r.Fixed[i])
	}
	for i := range r.Notes {
		fix(fmt.Sprintf("note %d", i+1), &r.Notes[i])
	}
	if len(left) > 0 {
		return fmt.Errorf("row %d (%s): refers to the issue tracker where the document must state the fact or rule: %s: rewrite it in the row's program (perf/ROWS.md)",
			r.N, r.Command, strings.Join(left, "; "))
	}
	return nil
}
