package main

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/urfave/cli/v2"
)

func localStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "say whether the emulator runs, where, and which endpoints it holds",
		Flags: []cli.Flag{stateDirFlag},
		Action: onRunningEmulator("emulator   not running (state %s)", func(c *cli.Context, dir string, emu localEmulator) error {
			w := c.App.Writer
			fmt.Fprintf(w, "emulator   %s (pid %d, state %s, since %s, access key id %s)\n", emu.URL, emu.PID, dir, emu.Started.Format("2006-01-02 15:04:05Z"), emu.creds.AccessKeyID)
			sm := sagemaker.NewFromConfig(emu.config())
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
			printEnv(c, emu)
			return nil
		}),
	}
}
