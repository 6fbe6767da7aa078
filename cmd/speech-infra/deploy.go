package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
)

func deployCommand() *cli.Command {
	return &cli.Command{
		Name:      "deploy",
		Usage:     "deploy a model's endpoint on AWS through the CDK app (--local: on the emulator), with autoscaling when the plan passes the gate",
		ArgsUsage: "<model>",
		Description: "On AWS: a preflight checks everything the deploy needs and reports every problem at once with its fix\n" +
			"(the CDK CLI from `npm ci`, Go, a Docker daemon, region, credentials, the CDK bootstrap, the instance quota),\n" +
			"then `cdk deploy` of the model's stacks runs with -c model, -c plan and -c autoscaling, its output streamed to\n" +
			"stderr; stdout gets the endpoint name. --dry-run prints the preflight and the exact CDK command and changes\n" +
			"nothing (exit 1 when a check fails). The CDK app's gate decides about scaling, as with --local.\n\n" +
			"--instance-type T deploys T instead of the catalog's type (-c instance_type=T; on --local instead of the\n" +
			"emulator's own \"local\"): the gate accepts only a plan measured on T (tts-bench plan --from-compare).\n\n" +
			"--local: runs the gate on the plan, deploys the endpoint with the container environment that follows from it\n" +
			"(blue/green when it changed), then applies the plan's scaling or removes scaling from an earlier plan.\n" +
			"--format text (the default) prints only the export lines for the emulator on stdout, so\n" +
			"eval \"$(speech-infra deploy <model> --local)\" works; the report, the gate's reasons and warnings go to\n" +
			"stderr. --format json prints the result as one JSON object on stdout.",
		Flags: slices.Concat([]cli.Flag{
			cliflags.Local("deploy on the local emulator (started in the background if needed)"),
			&cli.StringFlag{Name: "plan", Usage: "plan the gate reads, which must exist when given (default artifacts/<model>/plan.json; while that does not exist, the deploy has no autoscaling)"},
			cliflags.ContainerDir("container source directory whose digest the gate compares with the plan"),
			&cli.StringFlag{Name: "model-dir", Usage: "local directory with the model's weights (engines with weights only)", EnvVars: []string{"SPEECH_INFRA_MODEL_DIR"}},
			&cli.BoolFlag{Name: "autoscaling", Usage: "override the catalog's scaling.autoscaling: true makes a refused plan a failed check (exit 1), false deploys without scaling"},
			&cli.StringFlag{Name: "instance-type", Usage: "deploy this SageMaker instance type instead of the catalog's (on AWS: -c instance_type; --local: instead of \"local\"), e.g. the type tts-bench plan --from-compare planned for"},
			cliflags.Format("what to print on stdout: text or json (json with --local only)"),
		}, cliflags.InCategory(cliflags.CategoryAWS,
			cliflags.DryRun("print the preflight and the CDK command, change nothing (exit 1 when a check fails)"),
			&cli.BoolFlag{Name: "skip-preflight", Usage: "run cdk deploy without the preflight (for experts)"},
			&cli.BoolFlag{Name: "yes", Usage: "deploy without CDK's approval question on IAM changes (--require-approval never)"},
			&cli.BoolFlag{Name: "for-measurement", Usage: "the preflight wants two free instances of the quota instead of one (a tts-bench ttotal run adds one)"},
		), []cli.Flag{stateDirFlag, portFlag, containerBin}, awsFlags()),
		Action: func(c *cli.Context) error {
			cat, err := models.Default()
			if err != nil {
				return err
			}
			o := &deployOpts{
				args: c.Args().Slice(), local: c.Bool("local"), planPath: c.String("plan"), containerDir: c.String("container-dir"),
				modelDir: c.String("model-dir"), format: c.String("format"), instanceType: c.String("instance-type"), emulator: settingsFrom(c), catalog: cat,
				stdout: c.App.Writer, stderr: c.App.ErrWriter, connect: connectEmulator, clients: deployClientsFor,
				dryRun: c.Bool("dry-run"), skipPreflight: c.Bool("skip-preflight"), yes: c.Bool("yes"), forMeasurement: c.Bool("for-measurement"),
				aws: awsSettingsFrom(c), stdin: os.Stdin, runner: execRunner{}, preflightEnv: loadPreflightEnv,
			}
			o.planSet = c.IsSet("plan")
			if c.IsSet("autoscaling") {
				on := c.Bool("autoscaling")
				o.autoscaling = &on
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// deployClientsFor returns the real SDK clients for cfg.
func deployClientsFor(cfg aws.Config) cloud.DeployClients {
	return cloud.NewDeployClients(cfg)
}

// deployOpts is one speech-infra deploy: the command line, and what it runs with.
type deployOpts struct {
	args         []string
	local        bool
	planPath     string
	containerDir string
	modelDir     string
	format       string
	autoscaling  *bool
	// instanceType is --instance-type: the type deployed instead of the catalog's (AWS) or "local" (emulator).
	instanceType string
	emulator     emulatorSettings

	catalog        models.Catalog
	stdout, stderr io.Writer
	// connect returns the emulator of the settings, starting it when none runs.
	connect func(ctx context.Context, s emulatorSettings) (localEmulator, error)
	// clients makes the SDK clients for the emulator's configuration.
	clients func(aws.Config) cloud.DeployClients

	// The AWS side.
	dryRun, skipPreflight, yes, forMeasurement bool
	// planSet says --plan was given (a relative path then resolves in the current directory, not the app's).
	planSet bool
	aws     awsSettings
	stdin   io.Reader
	runner  programRunner
	// preflightEnv loads the AWS configuration the preflight checks.
	preflightEnv func(ctx context.Context, s awsSettings, timeout time.Duration) preflightEnv
	// checkTimeout bounds each preflight check (cloud.DefaultCheckTimeout when zero).
	checkTimeout time.Duration

	// model is set by Validate.
	model models.Model
}

// Validate checks the command line and reports every problem at once as one usage error.
func (o *deployOpts) Validate() error {
	var errs []error
	m, err := catalogModel(o.catalog, "deploy", o.args)
	if err != nil {
		errs = append(errs, err)
	}
	o.model = m
	id := m.ID
	if id == "" {
		id = "<model>"
	}
	if o.local {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--dry-run", o.dryRun}, {"--skip-preflight", o.skipPreflight}, {"--yes", o.yes}, {"--for-measurement", o.forMeasurement},
			{"--region", o.aws.region != ""}, {"--profile", o.aws.profile != ""}} {
			if f.set {
				errs = append(errs, fmt.Errorf("%s is for a deploy to AWS: leave it out with --local, or drop --local to deploy %s to AWS", f.name, id))
			}
		}
	} else {
		if o.format != "text" {
			errs = append(errs, fmt.Errorf("--format %s: a deploy to AWS streams CDK's output and prints the endpoint name: leave --format out, or use --local", o.format))
		}
		errs = append(errs, o.aws.validate()...)
	}
	// A plan asked for by name must be there, on AWS and on the emulator alike: without it the gate would
	// deploy without autoscaling. Only the default path may be absent (no plan yet).
	if o.planSet {
		if _, err := os.Stat(o.planPath); err != nil {
			errs = append(errs, fmt.Errorf("--plan %s: %v: give the plan tts-bench plan wrote, or leave --plan out for %s", o.planPath, err, capacity.DefaultPlanPath(id)))
		}
	}
	if m.Source != nil && o.local {
		if o.modelDir == "" {
			errs = append(errs, fmt.Errorf("%s needs its weights: pass --model-dir with the files of %s at %s", m.ID, m.Source.Repo, m.Source.Revision))
		} else if _, err := os.Stat(o.modelDir); err != nil {
			errs = append(errs, fmt.Errorf("--model-dir %s: %v: give the directory with the files of %s at %s", o.modelDir, err, m.Source.Repo, m.Source.Revision))
		}
	}
	if o.format != "text" && o.format != "json" {
		errs = append(errs, fmt.Errorf("--format %q is not a format: use text or json", o.format))
	}
	if t := o.instanceType; t != "" && !(o.local && t == models.LocalInstanceType) {
		if err := capacity.ValidInstanceType(t); err != nil {
			def := m.InstanceType
			if o.local {
				def = models.LocalInstanceType
			}
			errs = append(errs, fmt.Errorf("--instance-type %w: give a type such as ml.g6.xlarge (the one your plan was measured on: tts-bench plan prints it), or leave --instance-type out to deploy %s", err, quoteOr(def, "the catalog's type")))
		}
	}
	if o.planPath == "" && m.ID != "" {
		o.planPath = capacity.DefaultPlanPath(m.ID)
	}
	if o.local {
		errs = append(errs, o.emulator.validate()...)
	}
	return exitcode.Usage(errors.Join(errs...))
}

// Execute deploys with cloud.DeployModel on the emulator and renders the result: data on stdout, the gate's
// reasons and warnings on stderr. A refused plan that was asked for explicitly is a failed check (exit 1),
// reported after the result.
func (o *deployOpts) Execute(ctx context.Context) error {
	if !o.local {
		return o.executeAWS(ctx)
	}
	// The same gate as the endpoint stack decides whether scaling is created; it compares the plan with the
	// digest of the container source.
	digest, files, err := capacity.SourceDigestFiles(o.containerDir)
	if err != nil {
		digest = ""
		fmt.Fprintf(o.stderr, "warning: container source digest unavailable (%v): the gate cannot match a plan\n", err)
	}
	emu, err := o.connect(ctx, o.emulator)
	if err != nil {
		return err
	}
	res, deployErr := cloud.DeployModel(ctx, o.clients(emu.config()), cloud.DeployOptions{
		Model: o.model, InstanceType: o.deployedType(), Emulator: true, CloudWatchCompression: emu.CloudWatchCompression, Image: cloud.LocalImage, RoleARN: cloud.LocalRole,
		ContainerDigest: digest, ContainerNote: files.UntrackedNote(), PlanPath: o.planPath, ModelDir: o.modelDir, AutoscalingOverride: o.autoscaling,
	})
	refused := errors.Is(deployErr, cloud.ErrAutoscalingRefused)
	if deployErr != nil && !refused {
		return deployErr
	}
	for _, r := range res.Gate.Reasons {
		fmt.Fprintln(o.stderr, "autoscaling off:", r)
	}
	if o.format == "json" {
		err = renderDeployJSON(o.stdout, res, emu, o.emulator.stateDir)
	} else {
		err = renderDeployText(o.stderr, o.stdout, res, emu, o.emulator.stateDir)
	}
	if err != nil {
		return fmt.Errorf("write the result: %w", err)
	}
	if refused {
		return exitcode.CheckFailed(deployErr)
	}
	return nil
}

// renderDeployText reports what the deploy did on report, one aligned line per part (diagnostics), and writes
// the export lines that point the SDK at the emulator on exports (data), so that
// `eval "$(speech-infra deploy <model> --local)"` needs no filtering.
func renderDeployText(report, exports io.Writer, res cloud.DeployModelResult, emu localEmulator, stateDir string) error {
	var b strings.Builder
	dep := res.Deployed
	switch dep.Action {
	case cloud.Created:
		fmt.Fprintf(&b, "created    endpoint %s (model and endpoint config %s)\n", res.Endpoint, dep.ConfigName)
	case cloud.Updated:
		fmt.Fprintf(&b, "updated    endpoint %s: blue/green from %s to %s (old model and endpoint config deleted)\n", res.Endpoint, dep.OldConfigName, dep.ConfigName)
		for _, ch := range dep.Changes {
			fmt.Fprintf(&b, "  changed  %s\n", ch)
		}
	case cloud.Unchanged:
		fmt.Fprintf(&b, "unchanged  endpoint %s already runs %s: container environment and endpoint config are as planned\n", res.Endpoint, dep.ConfigName)
	}
	b.WriteString(queueShieldLine(res))

	var scaling string
	switch res.Scaling {
	case cloud.ScalingUnchanged:
		scaling = "unchanged: " + scalingSummary(*res.ScalingSpec)
	case cloud.ScalingApplied:
		scaling = fmt.Sprintf("applied from plan %s: %s", res.PlanPath, scalingSummary(*res.ScalingSpec))
	case cloud.ScalingRemoved:
		scaling = "removed: the scalable target, its policies and the alarms " + strings.Join(capacity.AlarmNames(res.Endpoint), ", ") + " are gone; the fleet stays at its current size"
	default:
		scaling = "off"
	}
	d := dep.Endpoint
	fmt.Fprintf(&b, "endpoint   %s (%s, %d instance(s), variant %s)\n", res.Endpoint, d.EndpointStatus, currentInstances(d), res.Variant)
	fmt.Fprintf(&b, "emulator   %s (state %s, access key id %s)\n", emu.URL, stateDir, emu.creds.AccessKeyID)
	fmt.Fprintf(&b, "scaling    %s\n", scaling)
	if _, err := io.WriteString(report, b.String()); err != nil {
		return err
	}
	return writeExports(exports, envOf(emu))
}

// currentInstances is the current instance count of the endpoint's first variant.
func currentInstances(d *sagemaker.DescribeEndpointOutput) int32 {
	if d == nil || len(d.ProductionVariants) == 0 {
		return 0
	}
	return aws.ToInt32(d.ProductionVariants[0].CurrentInstanceCount)
}

// queueShieldLine says what the container's queue shield is after the deploy and whether this deploy
// changed it.
func queueShieldLine(res cloud.DeployModelResult) string {
	q := res.QueueShield
	switch {
	case res.Gate.Enabled && q.Changed:
		return fmt.Sprintf("queue      shield %s applied from plan %s (was %s)\n", q.Now, res.PlanPath, shieldWords(q.Before))
	case res.Gate.Enabled:
		return fmt.Sprintf("queue      shield %s from plan %s\n", q.Now, res.PlanPath)
	case q.Changed:
		return fmt.Sprintf("queue      shield removed (was %s): back to the measurement configuration, QUEUE_MAX_DEPTH=0 (unbounded)\n", shieldWords(q.Before))
	}
	return "queue      measurement configuration, QUEUE_MAX_DEPTH=0 (unbounded) until a plan passes the gate\n"
}

func shieldWords(depth string) string {
	switch depth {
	case "", "0":
		return "unbounded, QUEUE_MAX_DEPTH=0"
	}
	return "depth " + depth
}

// scalingSummary is one line of what a scaling spec deploys.
func scalingSummary(s capacity.ScalingSpec) string {
	var scaleIn float64
	for _, a := range s.Alarms {
		if a.TriggersScaleIn {
			scaleIn = a.Threshold
		}
	}
	return fmt.Sprintf("target %g concurrent requests per instance (scale-out cooldown %d s), scale-in below %g (cooldown %d s), fleet %d-%d instances, alarms %s",
		s.ScaleOut.TargetValue, s.ScaleOut.ScaleOutCooldownS, scaleIn, s.ScaleIn.CooldownS, s.MinInstances, s.MaxInstances, strings.Join(capacity.AlarmNames(s.Endpoint), ", "))
}

// deployReport is the JSON form of a deploy's result (--format json).
type deployReport struct {
	Endpoint  string `json:"endpoint"`
	Variant   string `json:"variant"`
	Status    string `json:"status"`
	Instances int32  `json:"current_instances"`
	// Action is created, updated or unchanged.
	Action        string   `json:"action"`
	ModelName     string   `json:"model_name"`
	ConfigName    string   `json:"endpoint_config_name"`
	OldConfigName string   `json:"old_endpoint_config_name,omitempty"`
	Changes       []string `json:"changes"`
	PlanPath      string   `json:"plan"`
	Gate          struct {
		Enabled    bool     `json:"enabled"`
		Explicit   bool     `json:"explicit"`
		Reasons    []string `json:"reasons"`
		PlanSHA256 string   `json:"plan_sha256,omitempty"`
	} `json:"gate"`
	QueueShield struct {
		Before  string `json:"before"`
		Now     string `json:"now"`
		Changed bool   `json:"changed"`
	} `json:"queue_shield"`
	// Scaling is applied, unchanged, removed or off.
	Scaling      string   `json:"scaling"`
	ScalingDiffs []string `json:"scaling_diffs"`
	MinInstances int      `json:"min_instances,omitempty"`
	MaxInstances int      `json:"max_instances,omitempty"`
	TargetValue  float64  `json:"target_value,omitempty"`
	Emulator     struct {
		URL         string `json:"url"`
		StateDir    string `json:"state_dir"`
		AccessKeyID string `json:"access_key_id"`
	} `json:"emulator"`
	Env []envVar `json:"env"`
}

// renderDeployJSON prints the result as one indented JSON object.
func renderDeployJSON(w io.Writer, res cloud.DeployModelResult, emu localEmulator, stateDir string) error {
	var r deployReport
	dep := res.Deployed
	r.Endpoint, r.Variant, r.Action = res.Endpoint, res.Variant, string(dep.Action)
	if dep.Endpoint != nil {
		r.Status, r.Instances = string(dep.Endpoint.EndpointStatus), currentInstances(dep.Endpoint)
	}
	r.ModelName, r.ConfigName, r.OldConfigName = dep.ModelName, dep.ConfigName, dep.OldConfigName
	r.Changes = append([]string{}, dep.Changes...)
	r.PlanPath = res.PlanPath
	r.Gate.Enabled, r.Gate.Explicit, r.Gate.PlanSHA256 = res.Gate.Enabled, res.Gate.Explicit, res.Gate.PlanSHA256
	r.Gate.Reasons = append([]string{}, res.Gate.Reasons...)
	r.QueueShield.Before, r.QueueShield.Now, r.QueueShield.Changed = res.QueueShield.Before, res.QueueShield.Now, res.QueueShield.Changed
	r.Scaling, r.ScalingDiffs = string(res.Scaling), append([]string{}, res.ScalingDiffs...)
	if s := res.ScalingSpec; s != nil {
		r.MinInstances, r.MaxInstances, r.TargetValue = s.MinInstances, s.MaxInstances, s.ScaleOut.TargetValue
	}
	r.Emulator.URL, r.Emulator.StateDir, r.Emulator.AccessKeyID = emu.URL, stateDir, emu.creds.AccessKeyID
	r.Env = envOf(emu)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// executeAWS runs the preflight (unless --skip-preflight), prints it, and deploys the model's stacks with the
// CDK CLI unless --dry-run or a check failed. With --dry-run the preflight and the command are the data
// (stdout); otherwise they are diagnostics (stderr) and stdout gets the endpoint name after the deploy.
func (o *deployOpts) executeAWS(ctx context.Context) error {
	report := o.stderr
	if o.dryRun {
		report = o.stdout
	}
	planPath := o.planPath
	if o.planSet && !filepath.IsAbs(planPath) && o.aws.appDir != "." {
		// The CDK CLI runs in the app directory; --plan was given relative to here.
		if abs, err := filepath.Abs(planPath); err == nil {
			planPath = abs
		}
	}
	cmd := deployCommandFor(o.aws.target(), o.model, planPath, o.instanceType, o.autoscaling, o.yes)
	var problems int
	if !o.skipPreflight {
		timeout := o.checkTimeout
		if timeout <= 0 {
			timeout = cloud.DefaultCheckTimeout
		}
		env := o.preflightEnv(ctx, o.aws, timeout)
		free := 1
		if o.forMeasurement {
			free = 2
		}
		r := cloud.Preflight(ctx, o.runner, env.clients, cloud.PreflightOptions{
			AppDir: o.aws.appDir, Region: env.region, ConfigErr: env.configErr, InstanceType: o.deployedType(),
			Endpoint: o.model.EndpointName(), FreeInstances: free, Timeout: timeout,
		})
		title := fmt.Sprintf("deploy %s (%s, %d free instance(s) needed) to %s", o.model.ID, o.deployedType(), free, regionWords(r))
		if err := renderPreflight(report, title, r); err != nil {
			return fmt.Errorf("write the preflight: %w", err)
		}
		problems = r.Problems()
	}
	if o.dryRun {
		if _, err := fmt.Fprintf(o.stdout, "cdk command (dry run, not run):\n  %s\n", cmd); err != nil {
			return fmt.Errorf("write the command: %w", err)
		}
		if problems > 0 {
			return exitcode.CheckFailedf("deploy %s --dry-run: %d precondition(s) failed: apply the fixes above and run it again", o.model.ID, problems)
		}
		return nil
	}
	if problems > 0 {
		return exitcode.CouldNotRunf("deploy %s: %d precondition(s) failed, nothing was deployed: apply the fixes above and run it again (--skip-preflight deploys anyway)", o.model.ID, problems)
	}
	fmt.Fprintf(o.stderr, "running: %s\n", cmd)
	if err := o.runner.Stream(ctx, cmd, o.stdin, o.stderr, o.stderr); err != nil {
		return exitcode.CheckFailedf("deploy %s: %w: CDK's output above says why; CloudFormation rolls a failed stack back by itself: fix the cause and run the deploy again", o.model.ID, err)
	}
	return renderDeployedAWS(o.stdout, o.stderr, o.model, o.deployedType())
}

// deployedType is the instance type the deploy runs: --instance-type, or else the catalog's on AWS and
// "local" on the emulator.
func (o *deployOpts) deployedType() string {
	switch {
	case o.instanceType != "":
		return o.instanceType
	case o.local:
		return models.LocalInstanceType
	}
	return o.model.InstanceType
}

// quoteOr is s, or def when s is empty.
func quoteOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// regionWords names the account and region a preflight found.
func regionWords(r cloud.PreflightReport) string {
	switch {
	case r.Account != "" && r.Region != "":
		return fmt.Sprintf("aws://%s/%s", r.Account, r.Region)
	case r.Region != "":
		return "region " + r.Region
	}
	return "AWS (no region configured)"
}

// renderDeployedAWS prints the endpoint name (data) and the next step of the workflow (diagnostics).
func renderDeployedAWS(stdout, stderr io.Writer, m models.Model, instanceType string) error {
	ep := m.EndpointName()
	fmt.Fprintf(stderr, "deployed %s: endpoint %s (variant %s) runs on %s\n", strings.Join(modelStacks(m), ", "), ep, models.VariantName, instanceType)
	fmt.Fprintf(stderr, "next: check that nothing will disturb a measurement, then measure Q_max:\n")
	fmt.Fprintf(stderr, "  tts-bench drift --model %s\n", m.ID)
	fmt.Fprintf(stderr, "  tts-bench qmax --model %s --dry-run    (the ladder and its duration; then without --dry-run)\n", m.ID)
	_, err := fmt.Fprintln(stdout, ep)
	return err
}
