package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
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
	env := map[string]string{"ENGINE": m.Engine, "MODEL_ID": m.ID, "QUEUE_MAX_DEPTH": "0"}
	if m.Source != nil {
		dir := c.String("model-dir")
		if dir == "" {
			return usagef("%s needs its weights: pass --model-dir with the files of %s at %s", m.ID, m.Source.Repo, m.Source.Revision)
		}
		if _, err := os.Stat(dir); err != nil {
			return usagef("--model-dir %s: %v", dir, err)
		}
		env["MODEL_DIR"] = dir
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
	if dec.Enabled {
		env["QUEUE_MAX_DEPTH"] = strconv.Itoa(dec.Plan.Derived.QueueMaxDepth)
	}

	url, err := ensureEmulator(c.Context, c)
	if err != nil {
		return err
	}
	cfg := cloud.LocalConfig(url)
	sm := sagemaker.NewFromConfig(cfg)
	name := m.EndpointName()
	created, err := cloud.DeployEndpoint(c.Context, sm, cloud.EndpointSpec{
		Name: name, Variant: models.VariantName, Image: localImage, Environment: env,
		InstanceType: models.LocalInstanceType, InstanceCount: int32(m.InitialInstanceCount),
		StartupHealthCheckTimeoutS: int32(m.Container.StartupHealthCheckTimeoutS),
		RoleARN:                    "arn:aws:iam::000000000000:role/speech-infra-local",
	})
	if err != nil {
		return err
	}
	if !created {
		fmt.Fprintf(c.App.ErrWriter, "endpoint %s already exists: kept as it is (destroy it first to change its container settings)\n", name)
	}
	d, err := cloud.WaitInService(c.Context, sm, name, time.Duration(m.Container.StartupHealthCheckTimeoutS+30)*time.Second)
	if err != nil {
		return err
	}

	aas := applicationautoscaling.NewFromConfig(cfg)
	cw := cloudwatch.NewFromConfig(cfg)
	scaling := "off"
	if dec.Enabled {
		p := dec.Plan.Derived
		if err := cloud.ApplyScaling(c.Context, aas, cw, cloud.ScalingSpec{
			Endpoint: name, Variant: models.VariantName, Min: int32(p.MinInstances), Max: int32(p.MaxInstances),
			TargetValue: p.TargetValue, ScaleInThreshold: p.ScaleInThreshold,
			ScaleOutCooldownS: int32(p.ScaleOutCooldownS), ScaleInCooldownS: int32(p.ScaleInCooldownS),
		}); err != nil {
			return err
		}
		scaling = fmt.Sprintf("on: %d-%d instances, target %g concurrent requests per instance, scale-in below %g (plan %s)", p.MinInstances, p.MaxInstances, p.TargetValue, p.ScaleInThreshold, planPath)
	} else {
		// Like the stack synthesized without scaling: nothing from an earlier plan stays behind.
		if err := cloud.RemoveScaling(c.Context, aas, cw, name, models.VariantName); err != nil {
			return err
		}
		for _, r := range dec.Reasons {
			fmt.Fprintln(c.App.ErrWriter, "autoscaling off:", r)
		}
	}

	w := c.App.Writer
	v := d.ProductionVariants[0]
	fmt.Fprintf(w, "endpoint   %s (%s, %d instance(s), variant %s)\n", name, d.EndpointStatus, aws.ToInt32(v.CurrentInstanceCount), models.VariantName)
	fmt.Fprintf(w, "emulator   %s (state %s)\n", url, c.String(stateDirFlag.Name))
	fmt.Fprintf(w, "scaling    %s\n", scaling)
	printEnv(c, url)
	if dec.Explicit && !dec.Enabled {
		return errors.New("autoscaling was asked for but the gate refused the plan")
	}
	return nil
}
