package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/traffic"
)

const trafficDescription = `traffic brings your own traffic to the plan and the simulator: a request log (one row per request) or the
endpoint's CloudWatch history becomes a trace that tts-bench simulate, plan and replay read with --trace, and
describe measures a trace: its mean and peak rates, its surge ratio at the T_plan horizon, its burst factor and
its daily and weekly profiles.

Two kinds of trace file, both CSV text:
  request trace  every request's time, as import writes it: "# speech-infra request trace v1", "# start <RFC 3339>",
                 comment lines, then the column offset_s and one row per request, its seconds since the start,
                 in order, then "# end N requests". simulate reads it as a rate trace at 1-s steps (at most
                 200000 distinct steps: about two days whose rate changes every second); plan, replay and
                 compare read at most 16 MiB of a trace (about 1.5 million requests) and refuse a larger one.
  rate trace     rows "timestamp,rps" (RFC 3339 times or seconds since the start), as fetch writes it: one row
                 per CloudWatch period.

Examples:
  tts-bench traffic import requests.csv --time-column created_at --output artifacts/day.csv
  tts-bench traffic describe artifacts/day.csv --chart day.svg
  tts-bench traffic fetch --endpoint speech-kokoro-82m --since 14d --output artifacts/history.csv
  tts-bench simulate --model kokoro-82m --trace artifacts/day.csv`

func trafficCommand() *cli.Command {
	return &cli.Command{
		Name:        "traffic",
		Usage:       "import a request log, fetch an endpoint's CloudWatch history, or describe a trace (rates, surge, burst, profiles)",
		UsageText:   "tts-bench traffic import|describe|fetch [options]",
		Description: trafficDescription,
		Subcommands: []*cli.Command{trafficImportCommand(), trafficDescribeCommand(), trafficFetchCommand()},
	}
}

const trafficImportDescription = `import reads a request log, one row per request, and writes a request trace that keeps every request's
time (sorted: the log may be in any order), which tts-bench simulate, plan and replay take with --trace and
traffic describe measures.

The log: CSV with a header row naming the columns (RFC 4180 quoting; a UTF-8 byte-order mark is ignored), or
JSON lines, one object per request (the time a string or a number under its key). FILE "-" reads stdin.
--format is the log's format: csv, or jsonl (the default for a name ending in .jsonl or .ndjson).

--time-format of the time column:
  rfc3339  2024-03-01T12:00:00Z, 2024-03-01T13:00:00.125+01:00 (a zone is required)
  unix     seconds since 1970-01-01 UTC, optionally with a fraction: 1709294400, 1709294400.125
  unix-ms  milliseconds since 1970-01-01 UTC: 1709294400125
  sql      a date and a time separated by a space, up to 9 fractional digits (SQL Server's datetime2 writes 7):
           2024-03-01 12:00:00.1234567; a time WITHOUT a zone is read as UTC; with one, as written:
           2024-03-01 13:00:00+01:00, 2024-03-01 12:00:00+00 (PostgreSQL)
  auto     (default) the first row with a time decides: digits are unix, or unix-ms from 100000000000 on;
           a "T" after the date rfc3339; a space sql. Every row must then have that format.

A row whose time is missing, empty or unreadable is refused: the import names its row, line and column (up to
10 of them) and writes nothing, exit 2. With --skip-bad such rows are skipped, counted and the first 10 shown,
and the trace's comments record how many. A --time-column the log does not have is refused naming the
columns it has.

Rehearsing growth: --scale K multiplies the rate (each request stands for K: above 1 the copies are spread
evenly up to the next request, below 1 requests are kept evenly; floor(K × requests) are written);
--time-scale K compresses time (every offset from the first request divided by K: 2 plays an hour of the log in
30 minutes at twice the rate).

The log is streamed: memory stays bounded whatever its size (a day at 80 rps is 7 million rows): times are
sorted in runs of a million, spilled to a hidden temporary directory beside --output, then merged into the
trace, which is written atomically (readers see the old file or the whole new one). A trace lasts less than 31
days.

Exit codes: 0 imported, 2 a usage or input error (bad rows, a missing column, an unreadable log or an
unwritable --output), 130 or 143 stopped by SIGINT or SIGTERM (nothing written).

Examples:
  tts-bench traffic import requests.csv --time-column created_at --output day.csv
  tts-bench traffic import export.csv --time-column ts --time-format sql --skip-bad --output day.csv
  zcat access.jsonl.gz | tts-bench traffic import - --format jsonl --time-column time --output day.csv
  tts-bench traffic import requests.csv --time-column created_at --scale 1.5 --output day-x1.5.csv`

func trafficImportCommand() *cli.Command {
	return &cli.Command{
		Name:        "import",
		Usage:       "turn a request log (CSV or JSON lines, one row per request) into a request trace",
		UsageText:   "tts-bench traffic import FILE --time-column NAME [--format csv|jsonl] [--time-format auto|rfc3339|unix|unix-ms|sql] --output TRACE",
		Description: trafficImportDescription,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "time-column", Usage: "the column (CSV header) or key (JSON lines) holding each request's time (required)"},
			&cli.StringFlag{Name: "format", Usage: "the log's format: csv or jsonl (default: jsonl for a name ending in .jsonl or .ndjson, else csv)"},
			&cli.StringFlag{Name: "time-format", Value: traffic.TimeAuto, Usage: "auto, rfc3339, unix, unix-ms or sql (sql without a zone is UTC)"},
			&cli.BoolFlag{Name: "skip-bad", Usage: "skip rows whose time is missing or unreadable, and count them, instead of refusing the log"},
			&cli.Float64Flag{Name: "scale", Value: 1, Usage: fmt.Sprintf("multiply the rate by K, in (0, %d]", traffic.MaxScale)},
			&cli.Float64Flag{Name: "time-scale", Value: 1, Usage: fmt.Sprintf("compress time by K (2: twice as fast), in (0, %d]", traffic.MaxScale)},
			cliflags.Output("where to write the request trace (required; a .csv name lets simulate --trace read it)"),
		},
		Action: func(c *cli.Context) error {
			o := &trafficImportOpts{args: c.Args().Slice(), column: c.String("time-column"), format: c.String("format"), timeFormat: c.String("time-format"),
				skipBad: c.Bool("skip-bad"), scale: c.Float64("scale"), timeScale: c.Float64("time-scale"), output: c.String("output"),
				stdin: os.Stdin, stdout: c.App.Writer, stderr: c.App.ErrWriter}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// trafficImportOpts is one tts-bench traffic import.
type trafficImportOpts struct {
	args                               []string
	column, format, timeFormat, output string
	skipBad                            bool
	scale, timeScale                   float64
	stdin                              io.Reader
	stdout, stderr                     io.Writer
	input                              string
}

// Validate reports every problem of the command line at once, as a usage error.
func (o *trafficImportOpts) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch len(o.args) {
	case 1:
		o.input = o.args[0]
	case 0:
		bad("traffic import needs the log: give FILE (or - for stdin), e.g. tts-bench traffic import requests.csv --time-column ts --output day.csv")
	default:
		bad("traffic import takes one log, got %q: import each into its own trace", o.args)
	}
	if o.format == "" {
		o.format = traffic.FormatCSV
		if l := strings.ToLower(o.input); strings.HasSuffix(l, ".jsonl") || strings.HasSuffix(l, ".ndjson") {
			o.format = traffic.FormatJSONL
		}
	}
	if o.format != traffic.FormatCSV && o.format != traffic.FormatJSONL {
		bad("--format %q: the log is csv or jsonl, e.g. --format jsonl", o.format)
	}
	if o.column == "" {
		bad("--time-column is required: name the column (or JSON key) that holds each request's time, e.g. --time-column created_at")
	}
	if !slices.Contains(traffic.TimeFormats, o.timeFormat) {
		bad("--time-format %q: want one of %s, e.g. --time-format sql", o.timeFormat, strings.Join(traffic.TimeFormats, ", "))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"scale", o.scale}, {"time-scale", o.timeScale}} {
		if math.IsNaN(f.v) || f.v <= 0 || f.v > traffic.MaxScale {
			bad("--%s %s: want a factor in (0, %d], e.g. --%s 2", f.name, strconv.FormatFloat(f.v, 'g', -1, 64), traffic.MaxScale, f.name)
		}
	}
	if o.output == "" {
		bad("--output is required: where to write the request trace, e.g. --output day.csv")
	} else if err := atomicfile.Writable(o.output); err != nil {
		bad("--output %s: %v: give a path in a directory you can write", o.output, err)
	} else if o.input != "" && o.input != "-" && samePath(o.input, o.output) {
		bad("--output %s is the log itself: write the trace to another file", o.output)
	}
	if o.input != "" && o.input != "-" {
		if info, err := os.Stat(o.input); err != nil {
			bad("%s: %v: give the path of a request log", o.input, trafficPathError(err))
		} else if !info.Mode().IsRegular() && info.Mode()&os.ModeNamedPipe == 0 {
			bad("%s is not a regular file: give a request log (or - for stdin)", o.input)
		}
	}
	return exitcode.Usage(errors.Join(errs...))
}

// Execute imports the log and writes the trace atomically.
func (o *trafficImportOpts) Execute(ctx context.Context) error {
	opts := traffic.ImportOptions{Format: o.format, TimeColumn: o.column, TimeFormat: o.timeFormat, SkipBad: o.skipBad, Scale: o.scale, TimeScale: o.timeScale}
	res, err := traffic.ImportFile(ctx, o.input, o.stdin, o.output, opts)
	if err != nil {
		if ctx.Err() != nil {
			return interrupted(ctx, fmt.Errorf("traffic import: stopped, nothing written: %w", err))
		}
		return exitcode.Usage(err)
	}
	res.WriteSummary(o.stdout, o.column, o.scale, o.timeScale)
	fmt.Fprintf(o.stdout, "wrote the request trace to %s: describe it with tts-bench traffic describe %s\n", o.output, o.output)
	return nil
}

const trafficDescribeDescription = `describe measures a trace (a request trace from import, or a rate trace "timestamp,rps" such as fetch
writes), from its mean rate in each second (a rate trace's rows spread over the seconds they cover). "The x-s
rate at t" is the mean rate over [t, t + x).

  mean rate      all requests ÷ the trace's duration
  peaks          the highest 1-s, 10-s and 1-minute rate (windows sliding by 1 s)
  surge ratio    at the T_plan horizon (--t-plan, default 80s): for each start minute m (60 s, 120 s, ... after
                 the trace's start, with m + T_plan inside it), the highest 10-s rate starting in
                 [m, m + T_plan − 10 s] ÷ the 1-minute rate of the minute before, [m − 60 s, m): how far the
                 load rose above what the fleet was sized for while a new instance started. Quantiles p50, p90,
                 p95, p99 (nearest rank) over the start minutes, and the maximum; start minutes after a minute
                 without requests are left out and counted. The plan's surge ratio s is this quantity.
  burst factor   the 10-s peak ÷ the mean rate of the 5 minutes centred on it (moved inside the trace at its
                 ends): how sharply the peak rises above the load around it
  daily profile  the mean rate per hour of day (UTC) when the trace lasts at least 24 h and says when it starts
                 (a request trace, or RFC 3339 timestamps); weekly, per weekday, from 7 days

A rate trace resolves nothing finer than its step (CloudWatch's 1 minute): its 1-s and 10-s peaks are the
step's mean, and describe says so.

--chart FILE draws the rate per 10 s over time as SVG, written atomically. --format json prints the same
numbers for a program (rates in requests per second, times in seconds since the start).

Exit codes: 0 described, 2 a usage or input error (an unreadable or invalid trace, an unwritable --chart).

Examples:
  tts-bench traffic describe day.csv
  tts-bench traffic describe history.csv --t-plan 300s --chart history.svg
  tts-bench traffic describe day.csv --format json | jq .surge.quantiles.p95`

func trafficDescribeCommand() *cli.Command {
	return &cli.Command{
		Name:        "describe",
		Usage:       "measure a trace: mean and peak rates, surge ratio quantiles at T_plan, burst factor, daily and weekly profiles",
		UsageText:   "tts-bench traffic describe TRACE [--format text|json] [--chart out.svg] [--t-plan 80s]",
		Description: trafficDescribeDescription,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "t-plan", Value: traffic.DefaultTPlan, Usage: "the surge ratio's horizon T_plan (T_total + detection buffer): whole seconds, at least 10s"},
			&cli.StringFlag{Name: "chart", Usage: "also draw the rate per 10 s over time as an SVG file"},
			cliflags.Format("what to print: text or json"),
		},
		Action: func(c *cli.Context) error {
			o := &trafficDescribeOpts{args: c.Args().Slice(), tPlan: c.Duration("t-plan"), chart: c.String("chart"), format: c.String("format"), stdout: c.App.Writer, stderr: c.App.ErrWriter}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// trafficDescribeOpts is one tts-bench traffic describe.
type trafficDescribeOpts struct {
	args           []string
	tPlan          time.Duration
	chart, format  string
	stdout, stderr io.Writer
	trace          string
}

func (o *trafficDescribeOpts) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch len(o.args) {
	case 1:
		o.trace = o.args[0]
		if info, err := os.Stat(o.trace); err != nil {
			bad("%s: %v: give a trace file (tts-bench traffic import or fetch writes one)", o.trace, trafficPathError(err))
		} else if !info.Mode().IsRegular() {
			bad("%s is not a regular file: give a trace file", o.trace)
		}
	case 0:
		bad("traffic describe needs a trace: give TRACE, e.g. tts-bench traffic describe day.csv")
	default:
		bad("traffic describe takes one trace, got %q: describe each on its own", o.args)
	}
	if err := cliflags.CheckFormat(o.format); err != nil {
		errs = append(errs, err)
	}
	if o.tPlan < 10*time.Second || o.tPlan%time.Second != 0 || o.tPlan > 24*time.Hour {
		bad("--t-plan %s: want whole seconds from 10s to 24h (T_total + detection buffer), e.g. --t-plan 80s", o.tPlan)
	}
	if o.chart != "" {
		if err := atomicfile.Writable(o.chart); err != nil {
			bad("--chart %s: %v: give a path in a directory you can write", o.chart, err)
		}
	}
	return exitcode.Usage(errors.Join(errs...))
}

func (o *trafficDescribeOpts) Execute(ctx context.Context) error {
	s, err := traffic.Load(o.trace)
	if err != nil {
		return exitcode.Usage(err)
	}
	d, err := traffic.Describe(s, o.tPlan)
	if err != nil {
		return exitcode.Usage(err)
	}
	if o.chart != "" {
		svg, err := traffic.Chart(s)
		if err != nil {
			return exitcode.Usage(err)
		}
		if err := capacity.WriteFileAtomic(o.chart, svg); err != nil {
			return exitcode.Usagef("--chart %s: %w", o.chart, err)
		}
		fmt.Fprintf(o.stderr, "wrote the rate chart to %s\n", o.chart)
	}
	if o.format == cliflags.FormatJSON {
		enc := json.NewEncoder(o.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	return d.WriteText(o.stdout)
}

const trafficFetchDescription = `fetch reads an endpoint's request history from CloudWatch and writes it as a rate trace ("timestamp,rps",
one row per period) that tts-bench simulate, plan and replay take with --trace and traffic describe measures.

It reads the Sum of Invocations (namespace AWS/SageMaker, dimensions EndpointName and VariantName) with
GetMetricData, every page: per minute over the whole window (--since before now, its start rounded down to the
minute), and per 10 s over the last 3 hours (CloudWatch keeps sub-minute datapoints that long). Where the 10-s
read has datapoints off the minute, the metric was published at high resolution and those 3 hours stay at 10-s
periods; otherwise (SageMaker publishes Invocations once a minute) the whole trace is at 1-minute periods. The
output and the trace's comments say which. A period without a datapoint had no request (rate 0). The last
period is the current one, still filling.

--since is a duration: 14d, 36h, 90m (at most 15d: CloudWatch keeps 1-minute datapoints for 15 days).
--local reads the local emulator's CloudWatch (speech-infra deploy <model> --local starts it), which records
Invocations from the requests it serves.

Exit codes: 0 written, 1 no Invocations datapoint in the window (nothing written: check the endpoint name;
CloudWatch answers an unknown name with no data), 2 a usage error, 3 could not run (an AWS or network error).

Examples:
  tts-bench traffic fetch --endpoint speech-kokoro-82m --since 14d --output history.csv
  tts-bench traffic fetch --endpoint speech-espeak-ng --since 30m --local --output local.csv
  tts-bench traffic describe history.csv`

func trafficFetchCommand() *cli.Command {
	return &cli.Command{
		Name:        "fetch",
		Usage:       "read an endpoint's Invocations history from CloudWatch into a rate trace (per minute, or per 10 s where high-resolution)",
		UsageText:   "tts-bench traffic fetch --endpoint NAME [--since 14d] --output TRACE [--format text|json] [--local | --region R --profile P]",
		Description: trafficFetchDescription,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "endpoint", Usage: "the SageMaker endpoint, e.g. speech-kokoro-82m (required)"},
			&cli.StringFlag{Name: "variant", Value: models.VariantName, Usage: "the endpoint's production variant"},
			&cli.StringFlag{Name: "since", Value: "14d", Usage: "how far back to read: a duration such as 14d, 36h, 90m (at most 15d)"},
			cliflags.Output("where to write the rate trace (required)"),
			cliflags.Format("what to print about the trace written: text or json"),
		}, awsenv.Flags()...),
		Action: func(c *cli.Context) error {
			o := &trafficFetchOpts{args: c.Args().Slice(), endpoint: c.String("endpoint"), variant: c.String("variant"), sinceText: c.String("since"),
				output: c.String("output"), format: c.String("format"), env: awsenv.FromContext(c), stdout: c.App.Writer, stderr: c.App.ErrWriter, now: time.Now}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// trafficFetchOpts is one tts-bench traffic fetch.
type trafficFetchOpts struct {
	args                                 []string
	endpoint, variant, sinceText, output string
	format                               string
	env                                  awsenv.Settings
	stdout, stderr                       io.Writer
	now                                  func() time.Time
	since                                time.Duration
}

func (o *trafficFetchOpts) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(o.args) > 0 {
		bad("traffic fetch takes no arguments, got %q: use flags, see tts-bench traffic fetch --help", o.args)
	}
	if o.endpoint == "" {
		bad("--endpoint is required: name the SageMaker endpoint, e.g. --endpoint speech-kokoro-82m")
	}
	if o.variant == "" {
		bad("--variant is empty: give the production variant (default %s)", models.VariantName)
	}
	since, err := traffic.ParseSince(o.sinceText)
	if err != nil {
		bad("--since %q: %v: give a duration such as 14d, 36h or 90m", o.sinceText, err)
	} else if since < traffic.MinutePeriod || since > traffic.MaxHistory {
		bad("--since %s: want 1m to 15d (CloudWatch keeps 1-minute datapoints for 15 days), e.g. --since 14d", o.sinceText)
	}
	o.since = since
	if o.output == "" {
		bad("--output is required: where to write the rate trace, e.g. --output history.csv")
	} else if err := atomicfile.Writable(o.output); err != nil {
		bad("--output %s: %v: give a path in a directory you can write", o.output, err)
	}
	if err := cliflags.CheckFormat(o.format); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.env.Validate()...)
	return exitcode.Usage(errors.Join(errs...))
}

func (o *trafficFetchOpts) Execute(ctx context.Context) error {
	cfg, err := o.env.Config(ctx)
	if err != nil {
		return err
	}
	cw := cloud.NewClients(cfg).CloudWatch
	read := func(ctx context.Context, start, end time.Time, period time.Duration) ([]traffic.Datapoint, error) {
		points, err := cloud.ReadInvocations(ctx, cw, o.endpoint, o.variant, start, end, period)
		out := make([]traffic.Datapoint, len(points))
		for i, p := range points {
			out[i] = traffic.Datapoint(p)
		}
		return out, err
	}
	h, err := traffic.Fetch(ctx, read, o.now(), o.since)
	if err != nil {
		if ctx.Err() != nil {
			return interrupted(ctx, fmt.Errorf("traffic fetch: stopped, nothing written: %w", err))
		}
		return fmt.Errorf("traffic fetch %s on %s: %w", o.endpoint, awsenv.Where(o.env, cfg), err)
	}
	if h.Requests == 0 {
		return exitcode.CheckFailedf("traffic fetch: no Invocations datapoint for EndpointName=%s, VariantName=%s on %s from %s to %s: nothing written; check the endpoint name (CloudWatch answers an unknown one with no data) and --since",
			o.endpoint, o.variant, awsenv.Where(o.env, cfg), h.Start.Format(time.RFC3339), h.End.Format(time.RFC3339))
	}
	about := fmt.Sprintf("rate trace from CloudWatch: %s %s Sum, EndpointName=%s, VariantName=%s, on %s", capacity.MetricNamespace, cloud.InvocationsMetric, o.endpoint, o.variant, awsenv.Where(o.env, cfg))
	data, err := h.Encode(o.output, about)
	if err != nil {
		return fmt.Errorf("traffic fetch: %w", err)
	}
	if err := capacity.WriteFileAtomic(o.output, data); err != nil {
		return exitcode.Usagef("--output %s: %w", o.output, err)
	}
	if o.format == cliflags.FormatJSON {
		enc := json.NewEncoder(o.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(h.Summary(o.endpoint, o.variant, awsenv.Where(o.env, cfg), o.output))
	}
	fmt.Fprintf(o.stdout, "fetched %s requests to %s/%s from %s\n", strconv.FormatFloat(h.Requests, 'f', -1, 64), o.endpoint, o.variant, awsenv.Where(o.env, cfg))
	fmt.Fprintf(o.stdout, "  %s: %d rows\n", h.Resolution(), len(h.Periods))
	fmt.Fprintf(o.stdout, "wrote the rate trace to %s: describe it with tts-bench traffic describe %s\n", o.output, o.output)
	return nil
}

// samePath says whether a and b name the same file (both existing), or the same path.
func samePath(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(ia, ib)
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// trafficPathError is err without the path os.Stat repeats.
func trafficPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, os.ErrNotExist) {
			return errors.New("no such file")
		}
		return pe.Err
	}
	return err
}
