package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/internal/exitcode"
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
		Action: func(c *cli.Context) error {
			cat, err := models.Default()
			if err != nil {
				return err
			}
			o := &destroyOpts{
				args: c.Args().Slice(), local: c.Bool("local"), emulator: settingsFrom(c), catalog: cat,
				stdout: c.App.Writer, connect: connectEmulator, clients: destroyClientsFor,
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// destroyClients are the SDK clients destroy removes an endpoint with.
type destroyClients struct {
	endpoints cloud.EndpointAPI
	scaling   cloud.ScalingAPI
	alarms    cloud.AlarmRemoveAPI
}

// destroyClientsFor returns the real clients for cfg.
func destroyClientsFor(cfg aws.Config) destroyClients {
	return destroyClients{sagemaker.NewFromConfig(cfg), applicationautoscaling.NewFromConfig(cfg), cloudwatch.NewFromConfig(cfg)}
}

// destroyOpts is one speech-infra destroy: the command line, and what it runs with.
type destroyOpts struct {
	args     []string
	local    bool
	emulator emulatorSettings

	catalog models.Catalog
	stdout  io.Writer
	// connect returns the emulator of the settings, starting it when none runs.
	connect func(ctx context.Context, s emulatorSettings) (localEmulator, error)
	// clients makes the SDK clients for the emulator's configuration.
	clients func(aws.Config) destroyClients

	// model is set by Validate.
	model models.Model
}

// Validate checks the command line and reports every problem at once as one usage error.
func (o *destroyOpts) Validate() error {
	var errs []error
	m, err := catalogModel(o.catalog, "destroy", o.args)
	if err != nil {
		errs = append(errs, err)
	}
	o.model = m
	if !o.local {
		id := m.ID
		if id == "" {
			id = "<model>"
		}
		errs = append(errs, fmt.Errorf("removing %s from AWS goes through the CDK app (`npx cdk destroy -c model=%s`): speech-infra destroy runs only --local", id, id))
	}
	errs = append(errs, o.emulator.validate()...)
	return exitcode.Usage(errors.Join(errs...))
}

// Execute removes the endpoint from the emulator without asking: local resources cost nothing and deploy
// recreates them in seconds. An endpoint that does not exist is not an error.
func (o *destroyOpts) Execute(ctx context.Context) error {
	emu, err := o.connect(ctx, o.emulator)
	if err != nil {
		return err
	}
	cl := o.clients(emu.config())
	name := o.model.EndpointName()
	if _, err := cloud.RemoveScaling(ctx, cl.scaling, cl.alarms, name, models.VariantName); err != nil {
		return err
	}
	deleted, err := cloud.DestroyEndpoint(ctx, cl.endpoints, name)
	if err != nil {
		return err
	}
	if !deleted {
		_, err = fmt.Fprintf(o.stdout, "endpoint %s does not exist on %s: nothing to remove\n", name, emu.URL)
		return err
	}
	_, err = fmt.Fprintf(o.stdout, "removed endpoint %s, its endpoint config, model, scaling and alarms from %s\n", name, emu.URL)
	return err
}
