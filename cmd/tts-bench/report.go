package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/speech-infra/speech-infra/models"
)

const reportDescription = `report merges the records files of a replay's shards (tts-bench replay --shard i/n) into one report:
the per-minute table replay prints, with exact percentiles over the merged records, as if one machine had
driven the whole trace.

Each file must hold the records of one shard, gzipped as replay writes them, ending with the shard's end
record (whether it sent its whole part of the trace, and up to which arrival). report refuses files of
different runs (run id) or traces (the trace's digest) unless --force, always refuses two files of the same
shard or an arrival recorded twice, and refuses an incomplete set of shards (say, 3 of 4 files) or a shard
that stopped early (SIGINT, an error) or has no end record unless --force; with --force it names the slices
such a shard leaves short. A file that is not gzip, or holds a negative TTFAB, duration or size, is refused.
A single file re-reports its run.
The instance counts come from the .instances.json file replay writes beside a records file, when present.

Exit codes: 0 when every slice met the SLO, 1 when one did not, 2 for bad input.

Examples:
  tts-bench report --model kokoro-82m replay-day1-shard-0-of-2.jsonl.gz replay-day1-shard-1-of-2.jsonl.gz`

// MaxReportFiles bounds the files one report merges.
const MaxReportFiles = 1000

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:        "report",
		Usage:       "merge the records files of replay shards into one per-minute report",
		UsageText:   "tts-bench report [--model ID] [--bucket D] [--force] RECORDS.jsonl.gz...",
		Description: reportDescription,
		Flags: []cli.Flag{
			modelFlag("catalog id of the model whose SLO judges the slices"),
			&cli.IntFlag{Name: "slo-ms", Usage: "p95 TTFAB SLO in milliseconds (default: the catalog's)"},
			&cli.DurationFlag{Name: "bucket", Value: DefaultReplayBucket, Usage: "length of one row of the table"},
			cliflags.Force("merge files of different runs or traces, or an incomplete set of shards"),
			cliflags.Format("what to print: text or json"),
		},
		Action: catalogAction(newReportOpts),
	}
}

// reportOpts is a report command line: what the flags and arguments say, checked by Validate, run by
// Execute.
type reportOpts struct {
	files          []string
	modelID        string
	sloMs          int
	sloSet         bool
	bucket         time.Duration
	force          bool
	format         string
	catalog        models.Catalog
	stdout, stderr io.Writer

	// Set by Validate.
	model models.Model
	slo   time.Duration
}

// newReportOpts reads the command line of c; it checks nothing.
func newReportOpts(c *cli.Context, cat models.Catalog) *reportOpts {
	return &reportOpts{
		files: c.Args().Slice(), modelID: c.String("model"), sloMs: c.Int("slo-ms"), sloSet: c.IsSet("slo-ms"),
		bucket: c.Duration("bucket"), force: c.Bool("force"), format: c.String("format"),
		catalog: cat, stdout: c.App.Writer, stderr: c.App.ErrWriter,
	}
}

// Validate checks the command line and reports every problem at once, as one usage error (exit 2).
func (o *reportOpts) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(o.files) == 0 {
		bad("report needs the records files to merge as arguments: tts-bench report a.jsonl.gz b.jsonl.gz")
	}
	if len(o.files) > MaxReportFiles {
		bad("%d files: at most %d", len(o.files), MaxReportFiles)
	}
	m, err := o.catalog.Get(o.modelID)
	if err != nil {
		bad("--model: %w", err)
	} else {
		o.model, o.slo = m, time.Duration(m.SLO.TTFABMs)*time.Millisecond
	}
	if o.sloSet {
		if o.sloMs < 1 || o.sloMs > models.MaxSLOMs {
			bad("--slo-ms %d: want 1 to %d milliseconds", o.sloMs, models.MaxSLOMs)
		}
		o.slo = time.Duration(o.sloMs) * time.Millisecond
	}
	if o.bucket < time.Second || o.bucket > 24*time.Hour {
		bad("--bucket %s: want 1s to 24h", o.bucket)
	}
	if err := cliflags.CheckFormat(o.format); err != nil {
		errs = append(errs, err)
	}
	return exitcode.Usage(errors.Join(errs...))
}

// Execute reads and checks the files, merges them and prints the report.
func (o *reportOpts) Execute(context.Context) error {
	recs, samples, early, err := measure.MergeShards(o.files, o.force, o.stderr)
	if err != nil {
		return err
	}
	rep, err := measure.NewReplayReport(recs, samples, o.bucket, o.slo, o.model.ID)
	if err != nil {
		return exitcode.Usage(err)
	}
	rep.Files = o.files
	rep.MarkShort(early, o.bucket, o.stderr)
	return rep.Write(o.stdout, o.format)
}
