package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/speech-infra/speech-infra/models"
)

const thawDescription = `thaw repairs an endpoint that an interrupted measurement (kill -9, a crash, a lost connection) left
frozen: scaling suspended and the instance count pinned.

With a journal (--journal-dir, default .state/journals/<endpoint>.json, written by qmax and ttotal before
they change anything) it restores exactly what the journal recorded: the target's SuspendedState, its
minimum and maximum capacity, and the desired instance count; then it deletes the journal.
Without a journal it unsuspends the target and sets its bounds from the plan (when it passes the gate) or
else from the catalog (scaling.min_instances, scaling.max_instances).
--desired N then sets the instance count (within the target's bounds).

The measurement marker (the endpoint tag speech-infra:measurement, which qmax and ttotal write before they
freeze and remove when they restore): with a journal, thaw removes the marker when it is the journal's run's
and says so; another run's marker is left and named. Without a journal no marker is thaw's own: an endpoint
that carries one (live or expired) is refused (exit 1), naming the run, its owner, start and expiry, since
thawing would unsuspend that run's pin under it. --force removes any marker (and says whose it was), with or
without a journal: use it when the run that owns the marker is gone (kill -9 on a lost machine).

Each step changes only what differs: a second thaw changes nothing and says so.
Last, it removes the hidden temporary files a killed run left (qmax's or replay's records, a journal's
temporary copy) in --journal-dir and the model's artifacts directory (beside --plan), unless a running
process has them open.

Examples:
  tts-bench thaw --model espeak-ng --local
  tts-bench thaw --endpoint speech-kokoro-82m --region us-east-1 --desired 2
  tts-bench thaw --endpoint speech-kokoro-82m --region us-east-1 --force   # the marking run is gone`

// thawOpts is a thaw command line.
type thawOpts struct {
	args                                            []string
	endpoint, modelID, planPath, containerDir, jdir string
	desired                                         *int32
	force                                           bool
	format                                          string
	env                                             awsenv.Settings
	stdout, stderr                                  io.Writer
	// clients makes the clients for the configuration of env (cloud.NewClients when nil).
	clients measure.ClientFactory

	model *models.Model
}

func thawCommand() *cli.Command {
	return &cli.Command{
		Name:        "thaw",
		Usage:       "restore an endpoint an interrupted run left frozen: from its journal, else from the plan or catalog",
		UsageText:   "tts-bench thaw [--endpoint NAME | --model ID] [--desired N] [--force] [--local | --region R --profile P]",
		Description: thawDescription,
		Flags: append(modelFlags(),
			&cli.StringFlag{Name: "endpoint", Usage: "endpoint name (instead of --model)"},
			&cli.IntFlag{Name: "desired", Usage: "instance count to set once the rest is restored"},
			cliflags.Force("remove any run's measurement marker, and thaw without a journal an endpoint another run has marked"),
			cliflags.Format("what to print: text, or json (the endpoint, the journal restored from, each change and note, and the error when the thaw stopped on one)")),
		Action: func(c *cli.Context) error {
			o := &thawOpts{args: c.Args().Slice(), endpoint: c.String("endpoint"), modelID: modelUnlessEndpoint(c), planPath: c.String("plan"),
				containerDir: c.String("container-dir"), jdir: c.String("journal-dir"), force: c.Bool("force"), format: c.String(cliflags.FormatName), env: awsenv.FromContext(c), stdout: c.App.Writer, stderr: c.App.ErrWriter}
			var errs []error
			if err := cliflags.CheckFormat(o.format); err != nil {
				errs = append(errs, err)
			}
			if c.IsSet("desired") {
				n := c.Int("desired")
				if n < 1 || n > models.MaxInstances {
					errs = append(errs, fmt.Errorf("--desired %d: not an instance count: give 1 to %d", n, models.MaxInstances))
				} else {
					d := int32(n)
					o.desired = &d
				}
			}
			if err := o.Validate(errs...); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// Validate reports every problem of the command line at once, as a usage error.
func (o *thawOpts) Validate(errs ...error) error {
	if len(o.args) > 0 {
		errs = append(errs, fmt.Errorf("thaw takes no arguments, got %q: use --endpoint or --model", o.args))
	}
	cat, err := models.Default()
	if err != nil {
		return err
	}
	switch {
	case o.endpoint == "" && o.modelID == "":
		errs = append(errs, errors.New("no endpoint: give --endpoint NAME or --model ID"))
	case o.modelID != "":
		m, err := lookupModel(cat, o.modelID)
		if err != nil {
			errs = append(errs, err)
			break
		}
		if o.endpoint != "" && o.endpoint != m.EndpointName() {
			errs = append(errs, fmt.Errorf("--endpoint %s and --model %s disagree: the model's endpoint is %s: give one of them", o.endpoint, m.ID, m.EndpointName()))
		}
		o.model, o.endpoint = &m, m.EndpointName()
	default:
		// An endpoint of the catalog's naming gets the catalog's bounds.
		for _, id := range cat.IDs() {
			if m, err := cat.Get(id); err == nil && m.EndpointName() == o.endpoint {
				o.model = &m
			}
		}
	}
	if o.endpoint != "" {
		if _, err := cloud.JournalPath(o.jdir, o.endpoint); err != nil {
			errs = append(errs, fmt.Errorf("--endpoint/--journal-dir: %w", err))
		}
	}
	errs = append(errs, o.env.Validate()...)
	if o.planPath == "" && o.model != nil {
		o.planPath = capacity.DefaultPlanPath(o.model.ID)
	}
	return exitcode.Usage(errors.Join(errs...))
}

// Execute thaws and reports what changed on stdout.
func (o *thawOpts) Execute(ctx context.Context) error {
	var bounds *cloud.Bounds
	if o.model != nil {
		exp := cloud.Expect(ctx, *o.model, o.planPath, o.containerDir, o.env.Local, compressionOf(ctx, o.env))
		if ctx.Err() != nil {
			return interrupted(ctx, errors.New("thaw stopped while the gate checked the plan: nothing was changed"))
		}
		bounds = exp.Bounds(*o.model)
	}
	cfg, err := o.env.Config(ctx)
	if err != nil {
		return err
	}
	res, err := cloud.Thaw(ctx, measure.ClientsFor(o.clients, cfg).Freeze(), cloud.ThawOptions{
		JournalDir: o.jdir, Endpoint: o.endpoint, Variant: models.VariantName, Bounds: bounds, Desired: o.desired, Force: o.force,
	})
	if rerr := cloud.RenderThaw(o.stdout, o.format, o.endpoint, res, err); rerr != nil && err == nil {
		err = fmt.Errorf("write the result: %w", rerr)
	}
	if errors.Is(err, cloud.ErrJournalInvalid) {
		return exitcode.Usagef("thaw on %s: %w", awsenv.Where(o.env, cfg), err)
	}
	if err != nil {
		return fmt.Errorf("thaw on %s: %w", awsenv.Where(o.env, cfg), err)
	}
	dirs := []string{o.jdir}
	if o.model != nil {
		dirs = append(dirs, filepath.Dir(o.planPath))
	}
	removed, err := cloud.RemoveLeftoverTempFiles(dirs...)
	for _, f := range removed {
		fmt.Fprintf(o.stdout, "  removed the temporary file %s (%d bytes) a killed run left\n", f.Path, f.Size)
	}
	return err
}
