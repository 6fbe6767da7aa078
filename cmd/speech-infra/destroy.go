package main

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/models"
)

func destroyCommand() *cli.Command {
	return &cli.Command{
		Name:      "destroy",
		Usage:     "remove a model's endpoint, its scaling and alarms (--local: from the emulator)",
		ArgsUsage: "<model>",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "local", Usage: "remove it from the local emulator"},
			stateDirFlag, portFlag, containerBin,
		},
		Action: destroy,
	}
}

// destroy removes the endpoint from the emulator without asking: local resources cost nothing and deploy
// recreates them in seconds.
func destroy(c *cli.Context) error {
	m, err := modelArg(c)
	if err != nil {
		return err
	}
	if !c.Bool("local") {
		return usagef("removing %s from AWS goes through the CDK app (`npx cdk destroy -c model=%s`); speech-infra destroy runs only --local", m.ID, m.ID)
	}
	emu, err := ensureEmulator(c.Context, c)
	if err != nil {
		return err
	}
	url, cfg := emu.URL, emu.config()
	name := m.EndpointName()
	if _, err := cloud.RemoveScaling(c.Context, applicationautoscaling.NewFromConfig(cfg), cloudwatch.NewFromConfig(cfg), name, models.VariantName); err != nil {
		return err
	}
	deleted, err := cloud.DestroyEndpoint(c.Context, sagemaker.NewFromConfig(cfg), name)
	if err != nil {
		return err
	}
	if !deleted {
		fmt.Fprintf(c.App.Writer, "endpoint %s does not exist on %s: nothing to remove\n", name, url)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "removed endpoint %s, its endpoint config, model, scaling and alarms from %s\n", name, url)
	return nil
}
