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

const driftDescription = `drift compares what is deployed for a model with what should be, and only reads.

Deployed: the endpoint and its variant (status, desired instance count), the container environment it
runs (QUEUE_MAX_DEPTH, FIRST_AUDIO_TARGET_MS, SCHEDULER: read from the endpoint config's model), the
scalable target and its SuspendedState, the scaling policies, the alarms and their states, the freeze
journals of interrupted runs (--journal-dir, default .state/journals/<endpoint>.json), and the measurement
marker a running qmax or ttotal puts on the endpoint (the tag speech-infra:measurement), from any machine.
Should be: the plan (--plan, default artifacts/<model>/plan.json) when it passes the same gate the deploy
uses, with the plan's queue shield (QUEUE_MAX_DEPTH = its queue_max_depth); otherwise the measurement
configuration of the catalog: QUEUE_MAX_DEPTH=0, no target, no policies, no alarms.

Each finding has a severity and a remediation:
  error  suspended scaling, a journal present, an orphaned target or policy, a missing target, a capacity,
         policy or alarm mismatch, an alarm in ALARM, the endpoint missing or not InService, scaling
         without a queue shield (shield_missing), a container variable unlike the plan's
         (environment_mismatch), another run's measurement marker, live or expired (measurement_marker)
  warn   an alarm in INSUFFICIENT_DATA, an alarm of an earlier plan, a count unlike the catalog's, a hidden
         temporary file a killed run left (records or journal; in the plan's directory or --journal-dir)
  info   why no plan applies; the scale-in alarm in ALARM on an idle endpoint
Exit codes: 0 no error-level finding, 1 at least one, 2 a usage error, 3 could not run (an AWS or network error).

Examples:
  tts-bench drift --model espeak-ng --local
  tts-bench drift --model kokoro-82m --region us-east-1 --format json`

// target flags shared by drift, thaw and validate.
func modelFlags() []cli.Flag {
	return append([]cli.Flag{
		modelFlag("catalog id of the model (its endpoint is speech-<model>)"),
		&cli.StringFlag{Name: "plan", Usage: "plan to compare with (default artifacts/<model>/plan.json)"},
		cliflags.ContainerDir("container source directory whose digest the gate compares with the plan"),
		cliflags.JournalDir(cloud.DefaultJournalDir, "directory of the freeze journals"),
	}, awsenv.Flags()...)
}

// lookupModel resolves --model against the catalog, as a usage error naming the ids when unknown.
func lookupModel(cat models.Catalog, id string) (models.Model, error) {
	if id == "" {
		return models.Model{}, errors.New("--model: none given: name a catalog model, e.g. --model espeak-ng")
	}
	m, err := cat.Get(id)
	if err != nil {
		return models.Model{}, fmt.Errorf("--model %s: %w", id, err)
	}
	return m, nil
}

// driftOpts is a drift command line.
type driftOpts struct {
	args                                  []string
	modelID, planPath, containerDir, jdir string
	format                                string
	env                                   awsenv.Settings
	stdout, stderr                        io.Writer
	// clients makes the clients for the configuration of env (cloud.NewClients when nil).
	clients measure.ClientFactory

	model models.Model
}

func driftCommand() *cli.Command {
	return &cli.Command{
		Name:        "drift",
		Usage:       "compare what is deployed for a model with its plan or catalog (read-only); exit 1 on an error-level finding",
		UsageText:   "tts-bench drift [--model ID] [--local | --region R --profile P] [--plan F] [--format text|json]",
		Description: driftDescription,
		Flags:       append(modelFlags(), cliflags.Format("text or json")),
		Action: func(c *cli.Context) error {
			o := &driftOpts{args: c.Args().Slice(), modelID: c.String("model"), planPath: c.String("plan"), containerDir: c.String("container-dir"),
				jdir: c.String("journal-dir"), format: c.String("format"), env: awsenv.FromContext(c), stdout: c.App.Writer, stderr: c.App.ErrWriter}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// Validate reports every problem of the command line at once, as a usage error.
func (o *driftOpts) Validate() error {
	var errs []error
	if len(o.args) > 0 {
		errs = append(errs, fmt.Errorf("drift takes no arguments, got %q: use --model", o.args))
	}
	cat, err := models.Default()
	if err != nil {
		return err
	}
	if o.model, err = lookupModel(cat, o.modelID); err != nil {
		errs = append(errs, err)
	}
	if err := cliflags.CheckFormat(o.format); err != nil {
		errs = append(errs, err)
	}
	if o.jdir == "" {
		errs = append(errs, errors.New("--journal-dir is empty: give the journal directory or leave the flag out (default "+cloud.DefaultJournalDir+")"))
	}
	errs = append(errs, o.env.Validate()...)
	if o.planPath == "" && o.model.ID != "" {
		o.planPath = capacity.DefaultPlanPath(o.model.ID)
	}
	return exitcode.Usage(errors.Join(errs...))
}

// Execute reads the deployment, renders the findings on stdout and fails the check on an error-level finding.
func (o *driftOpts) Execute(ctx context.Context) error {
	exp := cloud.Expect(ctx, o.model, o.planPath, o.containerDir, o.env.Local, compressionOf(ctx, o.env))
	if ctx.Err() != nil {
		return interrupted(ctx, errors.New("drift stopped while the gate checked the plan: nothing was read"))
	}
	cfg, err := o.env.Config(ctx)
	if err != nil {
		return err
	}
	rep, err := cloud.Drift(ctx, measure.ClientsFor(o.clients, cfg).Drift(), cloud.DriftOptions{
		Model: o.model.ID, Endpoint: o.model.EndpointName(), Variant: models.VariantName, JournalDir: o.jdir,
		Spec: exp.Spec, PlanSource: exp.PlanPath, NoPlanReasons: exp.Reasons, CatalogInstances: int32(o.model.InitialInstanceCount),
		Container: &exp.Container, TempDirs: []string{filepath.Dir(o.planPath)},
		TempFix: fmt.Sprintf("tts-bench thaw --model %s --plan %s --journal-dir %s", o.model.ID, o.planPath, o.jdir),
	})
	if err != nil {
		return fmt.Errorf("drift %s on %s: %w", o.model.EndpointName(), awsenv.Where(o.env, cfg), err)
	}
	if err := cloud.RenderDrift(o.stdout, o.format, rep); err != nil {
		return fmt.Errorf("write the findings: %w", err)
	}
	if n := rep.Errors(); n > 0 {
		return exitcode.CheckFailedf("drift: %d error-level finding(s) on %s: follow the remediations above", n, rep.Endpoint)
	}
	return nil
}

// compressionOf is the CloudWatch compression of the platform env points at (awsenv.Settings.Compression); 1
// when it cannot be read (no emulator runs: the command reports that itself).
func compressionOf(ctx context.Context, env awsenv.Settings) int {
	f, err := env.Compression(ctx)
	if err != nil {
		return 1
	}
	return f
}
