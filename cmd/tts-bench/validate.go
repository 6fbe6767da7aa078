package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/speech-infra/speech-infra/models"
)

const validateDescription = `validate checks the scaling deployed for a model against a plan, and only reads.

Checks: the scalable target's minimum and maximum; the target-tracking policy's metric, target value, that
its scale-in is disabled, and its scale-out cooldown; the step policy's cooldown, adjustment and step; every
alarm's metric, statistic, threshold, period and evaluation periods, and that the scale-in alarm triggers the
scale-in policy; the container environment the endpoint runs (read from its endpoint config's model):
QUEUE_MAX_DEPTH is the plan's queue_max_depth, FIRST_AUDIO_TARGET_MS a third of its SLO, SCHEDULER the
default (deadline), and a registered scalable target has a queue shield under it. The plan is read as the
deploy reads it (strictly, verified); it need not pass the gate, so that a plan can be compared before it is
deployed.

Exit codes: 0 every check passes, 1 a mismatch, 2 a usage error or an unusable plan, 3 could not run (an AWS
or network error).

Example:
  tts-bench validate --model espeak-ng --plan artifacts/espeak-ng/plan.json --local`

// validateOpts is a validate command line.
type validateOpts struct {
	args              []string
	modelID, planPath string
	format            string
	env               awsenv.Settings
	stdout, stderr    io.Writer
	// clients makes the clients for the configuration of env (cloud.NewClients when nil).
	clients measure.ClientFactory

	model models.Model
	plan  *capacity.Plan
}

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:        "validate",
		Usage:       "check the deployed scaling against a plan (read-only); exit 1 on a mismatch",
		UsageText:   "tts-bench validate [--model ID] [--plan F] [--local | --region R --profile P] [--format text|json]",
		Description: validateDescription,
		Flags: append([]cli.Flag{
			modelFlag("catalog id of the model (its endpoint is speech-<model>)"),
			&cli.StringFlag{Name: "plan", Usage: "plan to check against (default artifacts/<model>/plan.json)"},
			cliflags.Format("text or json"),
		}, awsenv.Flags()...),
		Action: func(c *cli.Context) error {
			o := &validateOpts{args: c.Args().Slice(), modelID: c.String("model"), planPath: c.String("plan"), format: c.String("format"),
				env: awsenv.FromContext(c), stdout: c.App.Writer, stderr: c.App.ErrWriter}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// Validate reports every problem of the command line and the plan at once, as a usage error.
func (o *validateOpts) Validate() error {
	var errs []error
	if len(o.args) > 0 {
		errs = append(errs, fmt.Errorf("validate takes no arguments, got %q: use --model and --plan", o.args))
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
	errs = append(errs, o.env.Validate()...)
	if o.planPath == "" && o.model.ID != "" {
		o.planPath = capacity.DefaultPlanPath(o.model.ID)
	}
	if o.planPath != "" {
		p, err := capacity.LoadPlan(o.planPath)
		var verr []error
		if err == nil {
			verr = p.Verify() // re-runs the plan's simulations: once
		}
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--plan %s: %w: give the plan tts-bench plan wrote", o.planPath, err))
		case len(verr) > 0:
			errs = append(errs, fmt.Errorf("--plan %s: does not verify: %w: run tts-bench plan again instead of editing it", o.planPath, errors.Join(verr...)))
		case o.model.ID != "" && p.Fingerprint.Model != o.model.ID:
			errs = append(errs, fmt.Errorf("--plan %s is for model %s, not %s: give the model's plan", o.planPath, p.Fingerprint.Model, o.model.ID))
		default:
			o.plan = p
		}
	}
	return exitcode.Usage(errors.Join(errs...))
}

// Execute runs the checks, renders them on stdout and fails the check on a mismatch.
func (o *validateOpts) Execute(ctx context.Context) error {
	spec := capacity.ScalingSpecFor(o.model.EndpointName(), models.VariantName, o.plan)
	cfg, err := o.env.Config(ctx)
	if err != nil {
		return err
	}
	cl := measure.ClientsFor(o.clients, cfg)
	checks, err := cloud.ValidateScaling(ctx, cl.Validate(), spec)
	if err != nil {
		return fmt.Errorf("validate %s on %s: %w", spec.Endpoint, awsenv.Where(o.env, cfg), err)
	}
	// Scaling is registered unless the target check says it is absent.
	scaling := !slices.ContainsFunc(checks, func(c cloud.Check) bool { return c.Name == "scalable target" && !c.Pass })
	want := cloud.ContainerExpectation{QueueMaxDepth: o.plan.Derived.QueueMaxDepth,
		FirstAudioTargetMs: models.SLO{TTFABMs: o.plan.Fingerprint.SLOTTFABMs}.FirstAudioTargetMs()}
	env, err := cloud.ValidateContainer(ctx, cl.SageMaker, spec.Endpoint, spec.Variant, want, scaling)
	if err != nil {
		return fmt.Errorf("validate %s on %s: %w", spec.Endpoint, awsenv.Where(o.env, cfg), err)
	}
	checks = append(env, checks...)
	if err := cloud.RenderValidation(o.stdout, o.format, spec.Endpoint, o.planPath, checks); err != nil {
		return fmt.Errorf("write the checks: %w", err)
	}
	if n := cloud.Failed(checks); n > 0 {
		return exitcode.CheckFailedf("validate: %d of %d checks failed on %s: deploy the plan again (speech-infra deploy %s) or plan again", n, len(checks), spec.Endpoint, o.model.ID)
	}
	return nil
}
