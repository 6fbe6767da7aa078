package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/simulate"
	"github.com/speech-infra/speech-infra/traffic"
)

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// import through the CLI: a SQL export with 7 fractional digits and no zone (UTC), and JSON lines with RFC 3339
// times in another zone, both out of order, give the same trace; simulate reads it with --trace.
func TestTrafficImport(t *testing.T) {
	dir := t.TempDir()
	sqlLog := writeFile(t, filepath.Join(dir, "export.csv"), "id,created_at,voice\n2,2024-03-01 12:00:01.5000000,af\n1,2024-03-01 12:00:00.1234567,af\n3,2024-03-01 12:00:03.0000001,bf\n")
	jsonLog := writeFile(t, filepath.Join(dir, "access.jsonl"), `{"time":"2024-03-01T13:00:01.5+01:00","path":"/invocations"}`+"\n"+
		`{"time":"2024-03-01T13:00:00.1234567+01:00"}`+"\n"+`{"time":"2024-03-01T07:00:03.0000001-05:00"}`+"\n")
	var traces []string
	for _, c := range []struct {
		log, column, format string
		args                []string
	}{
		{sqlLog, "created_at", "sql: a time without a zone is UTC", []string{"--time-format", "sql"}},
		{jsonLog, "time", "rfc3339", nil},
	} {
		out := filepath.Join(dir, filepath.Base(c.log)+".trace.csv")
		stdout, stderr, code := runCLI(t, append([]string{"traffic", "import", c.log, "--time-column", c.column, "--output", out}, c.args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", c.log, code, stdout, stderr)
		}
		for _, want := range []string{"imported 3 requests from " + c.log, "time format " + c.format, "3 rows read, 0 skipped as bad; sorted: the log was out of time order",
			"first request 2024-03-01T12:00:00.1234567Z, last 2024-03-01T12:00:03.0000001Z: the trace lasts 3s", "wrote the request trace to " + out} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s: stdout does not say %q:\n%s", c.log, want, stdout)
			}
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "\noffset_s\n0\n1.3765433\n2.8765434\n# end 3 requests\n") || !strings.Contains(string(data), "# start 2024-03-01T12:00:00.1234567Z\n") {
			t.Errorf("%s: trace\n%s", c.log, data)
		}
		traces = append(traces, out)
	}
	stdout, stderr, code := runCLI(t, "simulate", "--model", "espeak-ng", "--what-if", "q_max=4,t_total_s=30,throughput_rps=10", "--trace", traces[0], "--output", filepath.Join(dir, "sim.svg"))
	if code != 0 || !strings.Contains(stdout, traces[0]) {
		t.Fatalf("simulate --trace %s: exit %d\n%s%s", traces[0], code, stdout, stderr)
	}
}

// The refusals of import, each exit 2, naming the row and the column, the columns present, or the flag and its
// fix; nothing is written.
func TestTrafficImportRefusals(t *testing.T) {
	dir := t.TempDir()
	log := writeFile(t, filepath.Join(dir, "log.csv"), "id,ts\n1,2024-03-01T12:00:00Z\n2,2024-03-01 25:00:00\n3,2024-03-01T12:00:02Z\n")
	out := filepath.Join(dir, "trace.csv")
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"bad timestamp", []string{log, "--time-column", "ts", "--output", out},
			[]string{`row 2 (line 3), column "ts": "2024-03-01 25:00:00": not an RFC 3339 time with a zone`, "pass --skip-bad"}},
		{"bad sql timestamp", []string{log, "--time-column", "ts", "--time-format", "sql", "--output", out},
			[]string{`row 1 (line 2), column "ts": "2024-03-01T12:00:00Z": not a SQL date and time`, `row 2 (line 3), column "ts": "2024-03-01 25:00:00"`}},
		{"unknown column", []string{log, "--time-column", "time", "--output", out},
			[]string{`has no column "time"; its columns are: "id", "ts"`}},
		{"flags", []string{log, "--format", "xml", "--time-format", "iso", "--scale", "0", "--time-scale", "-2", "--output", dir},
			[]string{"--time-column is required", `--format "xml": the log is csv or jsonl`, `--time-format "iso": want one of auto, rfc3339, unix, unix-ms, sql`,
				"--scale 0: want a factor in (0, 1000]", "--time-scale -2: want a factor", "--output " + dir + ": " + dir + " is a directory"}},
		{"no log", []string{"--time-column", "ts", "--output", out}, []string{"traffic import needs the log: give FILE"}},
		{"missing log", []string{filepath.Join(dir, "none.csv"), "--time-column", "ts", "--output", out}, []string{"none.csv: no such file"}},
		{"output is the log", []string{log, "--time-column", "ts", "--output", log}, []string{"is the log itself"}},
		{"misspelt flag", []string{log, "--time-colum", "ts"}, []string{"did you mean --time-column?"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, append([]string{"traffic", "import"}, c.args...)...)
			if code != exitcode.CodeUsage {
				t.Errorf("exit %d, want %d\n%s", code, exitcode.CodeUsage, stderr)
			}
			for _, want := range c.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused import wrote %s", out)
			}
		})
	}
	// --skip-bad skips, counts and shows the bad row.
	stdout, stderr, code := runCLI(t, "traffic", "import", log, "--time-column", "ts", "--skip-bad", "--output", out)
	if code != 0 || !strings.Contains(stdout, "3 rows read, 1 skipped as bad") || !strings.Contains(stdout, `skipped row 2 (line 3), column "ts"`) {
		t.Fatalf("--skip-bad: exit %d\n%s%s", code, stdout, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the directory holds %d entries, want the log and the trace (no temporary file left)", len(entries))
	}
}

// burstLog is a CSV log of an hour at 10 rps with one burst of 40 rps over [1805 s, 1815 s), Unix
// milliseconds, in reverse order.
func burstLog(t *testing.T, path string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("ts_ms,status\n")
	base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	for sec := 3599; sec >= 0; sec-- {
		n := 10
		if sec >= 1805 && sec < 1815 {
			n = 40
		}
		for k := n - 1; k >= 0; k-- {
			fmt.Fprintf(&b, "%d,200\n", base+int64(sec)*1000+int64(k*1000/n))
		}
	}
	return writeFile(t, path, b.String())
}

// describe's numbers on a trace built so that they are known by hand (traffic's TestDescribeKnownTrace works
// them out): mean 10.083, peaks 40 / 40 / 15, surge at T_plan 80 s p50 1, p90 1, p95 1, p99 4 over 58 start
// minutes, burst factor 40 ÷ 11; as text and as JSON; the chart written atomically.
func TestTrafficDescribe(t *testing.T) {
	dir := t.TempDir()
	log := burstLog(t, filepath.Join(dir, "burst.csv"))
	trace := filepath.Join(dir, "burst.trace.csv")
	if _, stderr, code := runCLI(t, "traffic", "import", log, "--time-column", "ts_ms", "--output", trace); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	chart := filepath.Join(dir, "charts", "burst.svg")
	if err := os.MkdirAll(filepath.Dir(chart), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, chart, "an older chart")
	stdout, stderr, code := runCLI(t, "traffic", "describe", trace, "--chart", chart)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		`mean rate\s+10\.083 rps`, `peak at 1 s\s+40 rps from 30m5s \(2024-03-01T12:30:05Z\)`, `peak at 10 s\s+40 rps from 30m5s`, `peak at 1 min\s+15 rps from 29m15s`,
		`surge ratio at T_plan 1m20s\s+p50 1, p90 1, p95 1, p99 4; max 4 \(start minute 29m0s`, `over 58 start minutes`,
		`burst factor\s+3\.636 \(10-s peak 40 rps ÷ 11 rps, the mean of the 5 minutes from 27m40s`,
		`daily profile: too short: the trace lasts 1h0m0s: a daily profile needs at least 24h`, `weekly profile: too short`,
	} {
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("stdout does not match %q:\n%s", want, stdout)
		}
	}
	svg, err := os.ReadFile(chart)
	if err != nil || !strings.Contains(string(svg), "<svg") || !strings.Contains(stderr, "wrote the rate chart to "+chart) {
		t.Fatalf("chart: %v\n%.100s\n%s", err, svg, stderr)
	}
	if entries, _ := os.ReadDir(filepath.Dir(chart)); len(entries) != 1 {
		t.Errorf("the chart's directory holds %d entries: a temporary file was left", len(entries))
	}

	stdout, stderr, code = runCLI(t, "traffic", "describe", trace, "--format", "json", "--t-plan", "600s")
	if code != 0 {
		t.Fatalf("json: exit %d\n%s", code, stderr)
	}
	var d traffic.Description
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout)
	}
	if d.Kind != traffic.KindRequests || d.Requests != 36300 || d.Surge == nil || d.Surge.TPlanS != 600 || d.Surge.StartMinutes != 50 ||
		d.Surge.Quantiles["p90"] != 4 || d.Surge.Quantiles["p50"] != 1 || d.Burst == nil || math.Abs(d.Burst.Factor-40.0/11) > 1e-9 || d.Daily.TooShort == "" {
		t.Errorf("json description %+v, surge %+v, burst %+v", d, d.Surge, d.Burst)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--t-plan", "5s"}, "--t-plan 5s: want whole seconds from 10s to 24h"},
		{[]string{"--format", "yaml"}, `--format "yaml" is not a format`},
		{[]string{"--chart", filepath.Join(dir, "burst.csv", "x.svg")}, "--chart " + filepath.Join(dir, "burst.csv", "x.svg")},
	} {
		if _, stderr, code := runCLI(t, append([]string{"traffic", "describe", trace}, c.args...)...); code != exitcode.CodeUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr does not say %q:\n%s", c.args, code, c.want, stderr)
		}
	}
	notTrace := writeFile(t, filepath.Join(dir, "not-a-trace.csv"), "hello\n")
	if _, stderr, code := runCLI(t, "traffic", "describe", notTrace, "--chart", chart); code != exitcode.CodeUsage || !strings.Contains(stderr, "not-a-trace.csv line 1") {
		t.Errorf("a file that is no trace: exit %d\n%s", code, stderr)
	}
	if svg2, _ := os.ReadFile(chart); string(svg2) != string(svg) {
		t.Error("a refused describe changed the chart")
	}
	if _, stderr, code := runCLI(t, "traffic", "describe"); code != exitcode.CodeUsage || !strings.Contains(stderr, "traffic describe needs a trace") {
		t.Errorf("no trace: exit %d\n%s", code, stderr)
	}
}

// fetch --local reads back the Invocations the emulator recorded from real invocations of the real container:
// the trace's requests are the invocations sent, at 1-minute periods (SageMaker, and the emulator with its
// 10-s metric period, publish Invocations once a minute), and describe and simulate read it.
func TestTrafficFetchLocal(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.Container(t), func(o *emulator.Options) { o.MetricPeriod = 10 * time.Second })
	const name = "speech-traffic"
	emulatortest.Endpoint(t, e, name, emulatortest.InService())
	dir := t.TempDir()
	out := filepath.Join(dir, "history.csv")
	// Nothing served yet: no datapoint, exit 1, nothing written.
	stdout, stderr, code := runCLI(t, "traffic", "fetch", "--local", "--state-dir", e.StateDir, "--endpoint", name, "--since", "10m", "--output", out)
	if code != exitcode.CodeCheckFailed || !strings.Contains(stderr, "no Invocations datapoint for EndpointName="+name) {
		t.Fatalf("before any invocation: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a fetch without data wrote a trace")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const sent = 12
	for i := range sent {
		if _, err := e.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String(name),
			ContentType: aws.String("application/json"), Body: []byte(fmt.Sprintf(`{"text":"request %d"}`, i))}); err != nil {
			t.Fatalf("invocation %d: %v", i, err)
		}
	}
	stdout, stderr, code = runCLI(t, "traffic", "fetch", "--local", "--state-dir", e.StateDir, "--endpoint", name, "--since", "10m", "--output", out)
	if code != 0 {
		t.Fatalf("fetch: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{fmt.Sprintf("fetched %d requests to %s/AllTraffic from the local emulator at %s", sent, name, e.URL), "1-minute periods from", "(no high-resolution data)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not say %q:\n%s", want, stdout)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := simulate.ParseCSV(out, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Requests(0, tr.Duration); math.Abs(got-sent) > 1e-9 {
		t.Errorf("the trace holds %g requests, want the %d sent", got, sent)
	}
	for _, p := range tr.Points {
		if p.At%time.Minute != 0 {
			t.Errorf("a row at %s: want 1-minute periods", p.At)
		}
	}
	stdout, stderr, code = runCLI(t, "traffic", "fetch", "--local", "--state-dir", e.StateDir, "--endpoint", name, "--since", "10m", "--output", out, "--format", "json")
	var sum traffic.FetchSummary
	if code != 0 || json.Unmarshal([]byte(stdout), &sum) != nil || sum.Requests != sent || sum.HighResFrom != "" || sum.Periods < 10 || sum.Output != out {
		t.Errorf("fetch --format json: exit %d, %+v\n%s%s", code, sum, stdout, stderr)
	}
	stdout, stderr, code = runCLI(t, "traffic", "describe", out, "--format", "json")
	var d traffic.Description
	if code != 0 || json.Unmarshal([]byte(stdout), &d) != nil || math.Abs(d.Requests-sent) > 1e-9 || d.StepS != 60 || d.Start == "" {
		t.Errorf("describe: exit %d, %+v\n%s", code, d, stderr)
	}
}

// An import stopped by SIGINT (the context canceled) exits 130 and writes nothing, leaving no temporary file.
func TestTrafficImportInterrupted(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("ts\n")
	for i := range 200_000 {
		fmt.Fprintf(&b, "%d\n", 1709294400+i)
	}
	log := writeFile(t, filepath.Join(dir, "log.csv"), b.String())
	out := filepath.Join(dir, "trace.csv")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr strings.Builder
	err := run(ctx, []string{"tts-bench", "traffic", "import", log, "--time-column", "ts", "--output", out}, &stdout, &stderr)
	if code := exitcode.Code(err); code != 130 || !strings.Contains(fmt.Sprint(err), "stopped, nothing written") {
		t.Fatalf("exit %d, err %v", code, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want the log alone", len(entries))
	}
}
