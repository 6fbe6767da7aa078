package main

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator"
)

func localStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "say whether the emulator runs, where, and which endpoints it holds",
		Flags: []cli.Flag{stateDirFlag},
		Action: onRunningEmulator("emulator   not running (state %s)", func(c *cli.Context, dir string, info emulator.Info) error {
			w := c.App.Writer
			fmt.Fprintf(w, "emulator   %s (pid %d, state %s, since %s)\n", info.URL, info.PID, dir, info.Started.Format("2006-01-02 15:04:05Z"))
			sm := sagemaker.NewFromConfig(cloud.LocalConfig(info.URL))
			list, err := sm.ListEndpoints(c.Context, &sagemaker.ListEndpointsInput{})
			if err != nil {
				return fmt.Errorf("list endpoints: %w", err)
			}
			for _, e := range list.Endpoints {
				d, err := sm.DescribeEndpoint(c.Context, &sagemaker.DescribeEndpointInput{EndpointName: e.EndpointName})
				if err != nil {
					return fmt.Errorf("describe endpoint %s: %w", aws.ToString(e.EndpointName), err)
				}
				v := d.ProductionVariants[0]
				fmt.Fprintf(w, "endpoint   %s %s, %d/%d instances\n", aws.ToString(d.EndpointName), d.EndpointStatus, aws.ToInt32(v.CurrentInstanceCount), aws.ToInt32(v.DesiredInstanceCount))
			}
			printEnv(c, info.URL)
			return nil
		}),
	}
}
