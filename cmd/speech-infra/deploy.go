package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/models"
)

// localImage is the image name the local model records; the emulator runs the container binary instead.
const localImage = "speech-infra/speech-container:local"

func deployCommand() *cli.Command {
	return &cli.Command{
		Name:      "deploy",
		Usage:     "deploy a model's endpoint (--local: on the emulator), with autoscaling when the plan passes the gate",
		ArgsUsage: "<model>",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "local", Usage: "deploy on the local emulator (started in the background if needed)"},
			&cli.StringFlag{Name: "plan", Usage: "plan the gate reads (default artifacts/<model>/plan.json)"},
			&cli.StringFlag{Name: "container-dir", Usage: "container source directory whose digest the gate compares with the plan", Value: "container"},
			&cli.StringFlag{Name: "model-dir", Usage: "local directory with the model's weights (engines with weights only)", EnvVars: []string{"SPEECH_INFRA_MODEL_DIR"}},
			stateDirFlag, portFlag, containerBin,
		},
		Action: deploy,
	}
}

func modelArg(c *cli.Context) (models.Model, error) {
	if c.NArg() != 1 {
		return models.Model{}, usagef("%s needs exactly one model id, e.g. `speech-infra %s espeak-ng --local`", c.Command.Name, c.Command.Name)
	}
	cat, err := models.Default()
	if err != nil {
		return models.Model{}, err
	}
	m, err := cat.Get(c.Args().First())
	if err != nil {
		return models.Model{}, usageError{err}
	}
	return m, nil
}

func deploy(c *cli.Context) error {
	m, err := modelArg(c)
	if err != nil {
		return err
	}
	if !c.Bool("local") {
		return usagef("deploying %s to AWS goes through the CDK app (`npx cdk deploy --all -c model=%s`); speech-infra deploy runs only --local", m.ID, m.ID)
	}
	dir := c.String("model-dir")
	if m.Source != nil {
		if dir == "" {
			return usagef("%s needs its weights: pass --model-dir with the files of %s at %s", m.ID, m.Source.Repo, m.Source.Revision)
		}
		if _, err := os.Stat(dir); err != nil {
			return usagef("--model-dir %s: %v", dir, err)
		}
	}

	// The same gate as the endpoint stack decides whether scaling is created.
	planPath := c.String("plan")
	if planPath == "" {
		planPath = capacity.DefaultPlanPath(m.ID)
	}
	digest, err := capacity.SourceDigest(c.String("container-dir"))
	if err != nil {
		digest = ""
		fmt.Fprintf(c.App.ErrWriter, "warning: container source digest unavailable (%v): the gate cannot match a plan\n", err)
	}
	dec := capacity.Gate(capacity.Deployment{Model: m, InstanceType: models.LocalInstanceType, ContainerDigest: digest}, planPath)
	env := m.ContainerEnvironment(dir, dec.QueueMaxDepth())

	emu, err := ensureEmulator(c.Context, c)
	if err != nil {
		return err
	}
	cfg := emu.config()
	sm := sagemaker.NewFromConfig(cfg)
	name := m.EndpointName()
	w, ew := c.App.Writer, c.App.ErrWriter
	// Waits cover a new instance's startup health check plus draining the old ones in a blue/green update.
	wait := time.Duration(m.Container.StartupHealthCheckTimeoutS+90) * time.Second
	res, err := cloud.DeployEndpoint(c.Context, sm, cloud.EndpointSpec{
		Name: name, Variant: models.VariantName, Image: localImage, Environment: env,
		InstanceType: models.LocalInstanceType, InstanceCount: int32(m.InitialInstanceCount),
		StartupHealthCheckTimeoutS: int32(m.Container.StartupHealthCheckTimeoutS),
		RoleARN:                    "arn:aws:iam::000000000000:role/speech-infra-local",
	}, wait)
	if err != nil {
		return err
	}
	switch res.Action {
	case cloud.Created:
		fmt.Fprintf(w, "created    endpoint %s (model and endpoint config %s)\n", name, res.ConfigName)
	case cloud.Updated:
		fmt.Fprintf(w, "updated    endpoint %s: blue/green from %s to %s (old model and endpoint config deleted)\n", name, res.OldConfigName, res.ConfigName)
		for _, ch := range res.Changes {
			fmt.Fprintf(w, "  changed  %s\n", ch)
		}
	case cloud.Unchanged:
		fmt.Fprintf(w, "unchanged  endpoint %s already runs %s: container environment and endpoint config are as planned\n", name, res.ConfigName)
	}
	printQueueShield(w, res, env, dec, planPath)

	aas := applicationautoscaling.NewFromConfig(cfg)
	cw := cloudwatch.NewFromConfig(cfg)
	var scaling string
	if dec.Enabled {
		spec := capacity.ScalingSpecFor(name, models.VariantName, dec.Plan)
		diffs, err := cloud.ScalingDiff(c.Context, aas, cw, spec)
		if err != nil {
			return err
		}
		summary := scalingSummary(spec)
		if len(diffs) == 0 {
			scaling = "unchanged: " + summary
		} else {
			if err := cloud.ApplyScaling(c.Context, aas, cw, spec); err != nil {
				return err
			}
			scaling = fmt.Sprintf("applied from plan %s: %s", planPath, summary)
		}
	} else {
		// Like the stack synthesized without scaling: nothing from an earlier plan stays behind.
		removed, err := cloud.RemoveScaling(c.Context, aas, cw, name, models.VariantName)
		if err != nil {
			return err
		}
		scaling = "off"
		if removed {
			scaling = "removed: the scalable target, its policies and the alarms " + strings.Join(capacity.AlarmNames(name), ", ") + " are gone; the fleet stays at its current size"
		}
		for _, r := range dec.Reasons {
			fmt.Fprintln(ew, "autoscaling off:", r)
		}
	}

	d := res.Endpoint
	v := d.ProductionVariants[0]
	fmt.Fprintf(w, "endpoint   %s (%s, %d instance(s), variant %s)\n", name, d.EndpointStatus, aws.ToInt32(v.CurrentInstanceCount), models.VariantName)
	fmt.Fprintf(w, "emulator   %s (state %s, access key id %s)\n", emu.URL, c.String(stateDirFlag.Name), emu.creds.AccessKeyID)
	fmt.Fprintf(w, "scaling    %s\n", scaling)
	printEnv(c, emu)
	if dec.Explicit && !dec.Enabled {
		return errors.New("autoscaling was asked for but the gate refused the plan")
	}
	return nil
}

// printQueueShield says what the container's queue shield is after the deploy and whether this deploy
// changed it.
func printQueueShield(w io.Writer, res cloud.DeployResult, env map[string]string, dec capacity.Decision, planPath string) {
	before := ""
	if res.Previous != nil {
		before = res.Previous.Environment["QUEUE_MAX_DEPTH"]
	}
	now := env["QUEUE_MAX_DEPTH"]
	changed := res.Action == cloud.Updated && before != now
	switch {
	case dec.Enabled && changed:
		fmt.Fprintf(w, "queue      shield %s applied from plan %s (was %s)\n", now, planPath, shieldWords(before))
	case dec.Enabled:
		fmt.Fprintf(w, "queue      shield %s from plan %s\n", now, planPath)
	case changed:
		fmt.Fprintf(w, "queue      shield removed (was %s): back to the measurement configuration, QUEUE_MAX_DEPTH=0 (unbounded)\n", shieldWords(before))
	default:
		fmt.Fprintln(w, "queue      measurement configuration, QUEUE_MAX_DEPTH=0 (unbounded) until a plan passes the gate")
	}
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
