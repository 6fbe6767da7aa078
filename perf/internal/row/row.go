// Package row is the file format between the benchmark programs under perf and the BENCHMARKS.md
// assembler (perf/report): each program measures one comparison and writes one Row as
// JSON to <dir>/<n>-<name>.json (Path), with its SVG charts next to it; the assembler reads every row file
// of the directory and renders them in the fixed order of N.
//
// A Row carries everything its section of BENCHMARKS.md shows: title, figures, the table of results, each
// goal with its measured figure and whether it is met (and why, when it is missed), what was fixed, the
// command that reproduces it, the machine and the date. It is written atomically (Write) and read strictly
// (Read: unknown, missing, duplicate and null keys are refused).
package row

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/strictjson"
)

// SchemaVersion is the version of the Row format this package writes and reads.
const SchemaVersion = 1

// DefaultDir is where the programs write their rows unless told otherwise (relative to the repository root).
const DefaultDir = ".cache/bench"

// Verdicts of a Goal.
const (
	// Met: the measured figure meets the goal.
	Met = "met"
	// Missed: it does not; Goal.Why says why.
	Missed = "missed"
	// NotMeasured: the run could not measure it (a peer tool missing, a smoke run too small to judge);
	// Goal.Why says what is missing.
	NotMeasured = "not-measured"
)

// Row is one comparison's result.
type Row struct {
	// Schema is SchemaVersion.
	Schema int `json:"schema"`
	// N is the row's place in BENCHMARKS.md (1 to 99); Name its short file name
	// ("load-engine"); Title its heading.
	N     int    `json:"n"`
	Name  string `json:"name"`
	Title string `json:"title"`
	// Summary is one paragraph: what is compared with what, and how (Markdown).
	Summary string `json:"summary"`
	// Smoke is true when the row was measured at the smallest size (make bench-smoke): its figures only
	// show the program still works.
	Smoke bool `json:"smoke"`
	// Command reproduces the row from the repository root, e.g. "go run ./perf/loadengine".
	Command string `json:"command"`
	// Machine is where it ran; Date when it started (UTC).
	Machine Machine   `json:"machine"`
	Date    time.Time `json:"date"`
	// Duration is how long the measurement took.
	Duration Seconds `json:"duration_s"`
	// Goals are the row's goals, each with its figure and verdict; a row with none states only figures.
	Goals []Goal `json:"goals"`
	// Tables hold the measured figures.
	Tables []Table `json:"tables"`
	// Figures are the charts, file names relative to the row file's directory (SVG).
	Figures []Figure `json:"figures"`
	// Fixed lists what was changed in the project because this row's measurement pointed at it (each with
	// the commit or file), empty when nothing was.
	Fixed []string `json:"fixed"`
	// Notes are further caveats (Markdown), e.g. the file-descriptor limit or a peer's version.
	Notes []string `json:"notes"`
}

// Goal is one goal of a row and how the run did against it.
type Goal struct {
	// Text is the goal, e.g. "request rate >= 0.9x wrk's at every C".
	Text string `json:"text"`
	// Measured is the figure that decides it, e.g. "0.94x at C=1000 (lowest)".
	Measured string `json:"measured"`
	// Verdict is Met, Missed or NotMeasured.
	Verdict string `json:"verdict"`
	// Why explains a Missed or NotMeasured verdict (required then), and may add context to Met.
	Why string `json:"why,omitempty"`
}

// Table is a titled table of strings, already formatted.
type Table struct {
	Title   string     `json:"title"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
}

// Figure is one chart file.
type Figure struct {
	// File is the SVG's file name, relative to the row file's directory, e.g. "1-load-engine-rate.svg".
	File string `json:"file"`
	// Caption says what it shows.
	Caption string `json:"caption"`
}

// Machine describes the host.
type Machine struct {
	// NProc is runtime.NumCPU (what nproc prints); MemTotalBytes is MemTotal from /proc/meminfo.
	NProc         int    `json:"nproc"`
	MemTotalBytes int64  `json:"mem_total_bytes"`
	CPUModel      string `json:"cpu_model"`
	OS            string `json:"os"`
	Arch          string `json:"arch"`
	GoVersion     string `json:"go_version"`
	// FDLimit is the soft RLIMIT_NOFILE of the measuring process.
	FDLimit uint64 `json:"fd_limit"`
}

// Seconds is a duration written as a number of seconds.
type Seconds float64

// Of returns d in Seconds.
func Of(d time.Duration) Seconds { return Seconds(d.Seconds()) }

var nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Validate returns every problem of the row, each naming the field and the fix.
func (r Row) Validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if r.Schema != SchemaVersion {
		add("schema: is %d: want %d (rewrite the row with this version's program)", r.Schema, SchemaVersion)
	}
	if r.N < 1 || r.N > 99 {
		add("n: is %d: want the row's place, 1 to 99", r.N)
	}
	if !nameRE.MatchString(r.Name) {
		add("name: %q: want lower-case words joined by '-', e.g. load-engine", r.Name)
	}
	if strings.TrimSpace(r.Title) == "" {
		add("title: is empty: give the row's heading")
	}
	if strings.TrimSpace(r.Command) == "" {
		add("command: is empty: give the command that reproduces the row")
	}
	if r.Date.IsZero() {
		add("date: is not set: use the time the measurement started")
	}
	if r.Machine.NProc < 1 {
		add("machine.nproc: is %d: fill Machine with CurrentMachine()", r.Machine.NProc)
	}
	for i, g := range r.Goals {
		switch g.Verdict {
		case Met:
		case Missed, NotMeasured:
			if strings.TrimSpace(g.Why) == "" {
				add("goals[%d].why: is empty for verdict %q: say why the goal is %s", i, g.Verdict, g.Verdict)
			}
		default:
			add("goals[%d].verdict: %q: want %s, %s or %s", i, g.Verdict, Met, Missed, NotMeasured)
		}
		if strings.TrimSpace(g.Text) == "" {
			add("goals[%d].text: is empty: state the goal", i)
		}
	}
	for i, t := range r.Tables {
		for j, cells := range t.Rows {
			if len(cells) != len(t.Columns) {
				add("tables[%d].rows[%d]: has %d cells for %d columns", i, j, len(cells), len(t.Columns))
			}
		}
	}
	for i, f := range r.Figures {
		if f.File == "" || f.File != filepath.Base(f.File) || !strings.HasSuffix(f.File, ".svg") {
			add("figures[%d].file: %q: want an .svg file name in the row's directory, without a path", i, f.File)
		}
	}
	return errs
}

// FileName is the row file's name, "<n>-<name>.json".
func FileName(n int, name string) string { return strconv.Itoa(n) + "-" + name + ".json" }

// Path is the row file's path in dir.
func Path(dir string, n int, name string) string { return filepath.Join(dir, FileName(n, name)) }

// Write validates r and writes it to Path(dir, r.N, r.Name) atomically, creating dir. It returns the path.
func Write(dir string, r Row) (string, error) {
	if errs := r.Validate(); len(errs) > 0 {
		return "", fmt.Errorf("row %d (%s) is invalid: %w", r.N, r.Name, errors.Join(errs...))
	}
	// Empty lists are written as [] (the format has no nulls).
	if r.Goals == nil {
		r.Goals = []Goal{}
	}
	if r.Tables == nil {
		r.Tables = []Table{}
	}
	if r.Figures == nil {
		r.Figures = []Figure{}
	}
	if r.Fixed == nil {
		r.Fixed = []string{}
	}
	if r.Notes == nil {
		r.Notes = []string{}
	}
	for i := range r.Tables {
		if r.Tables[i].Rows == nil {
			r.Tables[i].Rows = [][]string{}
		}
		if r.Tables[i].Columns == nil {
			r.Tables[i].Columns = []string{}
		}
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode row %d: %w", r.N, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create the row directory: %w: check the path and its permissions", err)
	}
	p := Path(dir, r.N, r.Name)
	if err := atomicfile.WriteFile(p, append(data, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write row %s: %w", p, err)
	}
	return p, nil
}

// MaxFileBytes bounds a row file Read accepts.
const MaxFileBytes = 4 << 20

// Read reads and strictly decodes a row file and validates it; its name must match its n and name.
func Read(path string) (Row, error) {
	data, err := strictjson.ReadFile(path, MaxFileBytes)
	if err != nil {
		return Row{}, fmt.Errorf("read row %s: %w", path, err)
	}
	var r Row
	if problems := strictjson.Decode(data, &r, "not a field of a benchmark row", "a benchmark row"); len(problems) > 0 {
		return Row{}, fmt.Errorf("row %s is not a valid row: %s: regenerate it with its program", path, strings.Join(problems, "; "))
	}
	if errs := r.Validate(); len(errs) > 0 {
		return Row{}, fmt.Errorf("row %s: %w", path, errors.Join(errs...))
	}
	if want := FileName(r.N, r.Name); filepath.Base(path) != want {
		return Row{}, fmt.Errorf("row %s: says it is row %d %q, whose file is %s: rename it or regenerate it", path, r.N, r.Name, want)
	}
	return r, nil
}

// CurrentMachine describes this host.
func CurrentMachine() Machine {
	m := Machine{NProc: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version()}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					m.MemTotalBytes = kb * 1024
				}
			}
		}
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		m.FDLimit = lim.Cur
	}
	return m
}

// Verdict returns Met when ok, else Missed.
func Verdict(ok bool) string {
	if ok {
		return Met
	}
	return Missed
}
