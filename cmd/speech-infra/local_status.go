package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

func localStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "say whether the emulator runs, where, and which endpoints it holds",
		Description: "With --format text (the default; env is its earlier name) stdout holds only the export lines that point the SDK and the AWS CLI\n" +
			"at the emulator, so `eval \"$(speech-infra local status)\"` configures a shell; the emulator and its\n" +
			"endpoints are described on stderr. --format json prints all of it as one JSON object on stdout.",
		Flags: []cli.Flag{
			stateDirFlag,
			cliflags.Format("what to print on stdout: text (the export lines) or json"),
		},
		Action: func(c *cli.Context) error {
			o := &statusOpts{
				stateDir: c.String(stateDirFlag.Name), format: c.String("format"), args: c.Args().Slice(),
				stdout: c.App.Writer, stderr: c.App.ErrWriter,
				locate:  locateEmulator,
				clients: func(cfg aws.Config) endpointReader { return sagemaker.NewFromConfig(cfg) },
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// endpointReader is the part of the SageMaker client local status reads endpoints with.
type endpointReader interface {
	ListEndpoints(ctx context.Context, in *sagemaker.ListEndpointsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.ListEndpointsOutput, error)
	DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error)
}

// statusOpts is one speech-infra local status: the command line, and what it runs with.
type statusOpts struct {
	stateDir string
	format   string
	args     []string

	stdout, stderr io.Writer
	// locate finds the emulator running on a state directory.
	locate func(dir string) (localEmulator, bool, error)
	// clients makes the SageMaker client for the emulator's configuration.
	clients func(aws.Config) endpointReader
}

// Validate checks the command line and reports every problem at once as one usage error.
func (o *statusOpts) Validate() error {
	var errs []error
	if len(o.args) > 0 {
		errs = append(errs, fmt.Errorf("local status takes no arguments, got %s: use --state-dir to name the emulator", quoteAll(o.args)))
	}
	if err := cliflags.CheckFormat(o.format); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, emulatorSettings{stateDir: o.stateDir}.validate()...)
	return exitcode.Usage(errors.Join(errs...))
}

// Execute reads the emulator's state and renders it.
func (o *statusOpts) Execute(ctx context.Context) error {
	st, err := o.status(ctx)
	if err != nil {
		return err
	}
	if o.format == "json" {
		return renderStatusJSON(o.stdout, st)
	}
	return renderStatusEnv(o.stdout, o.stderr, st)
}

// localStatus is what local status reports.
type localStatus struct {
	// Running says whether an emulator runs on StateDir; the other fields are set only when one does.
	Running  bool      `json:"running"`
	StateDir string    `json:"state_dir"`
	URL      string    `json:"url,omitempty"`
	PID      int       `json:"pid,omitempty"`
	Started  time.Time `json:"started,omitzero"`
	// AccessKeyID is the emulator's access key id.
	AccessKeyID string `json:"access_key_id,omitempty"`
	// Endpoints are the endpoints the emulator holds, in its order.
	Endpoints []endpointStatus `json:"endpoints,omitempty"`
	// Env are the variables that point the SDK and the AWS CLI at the emulator, in export order.
	Env []envVar `json:"env,omitempty"`
}

// endpointStatus is one endpoint of the emulator.
type endpointStatus struct {
	Name              string `json:"name"`
	Status            string `json:"status"`
	CurrentInstances  int32  `json:"current_instances"`
	DesiredInstances  int32  `json:"desired_instances"`
	ProductionVariant string `json:"variant"`
}

// envVar is one environment variable.
type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// status reads the state of the emulator on the state directory.
func (o *statusOpts) status(ctx context.Context) (localStatus, error) {
	st := localStatus{StateDir: o.stateDir}
	emu, ok, err := o.locate(o.stateDir)
	if err != nil {
		return st, err
	}
	if !ok {
		return st, nil
	}
	st.Running, st.URL, st.PID, st.Started, st.AccessKeyID = true, emu.URL, emu.PID, emu.Started.UTC(), emu.creds.AccessKeyID
	st.Env = envOf(emu)
	sm := o.clients(emu.config())
	list, err := sm.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{})
	if err != nil {
		return st, fmt.Errorf("list endpoints: %w", err)
	}
	for _, e := range list.Endpoints {
		d, err := sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: e.EndpointName})
		if err != nil {
			return st, fmt.Errorf("describe endpoint %s: %w", aws.ToString(e.EndpointName), err)
		}
		es := endpointStatus{Name: aws.ToString(d.EndpointName), Status: string(d.EndpointStatus)}
		if len(d.ProductionVariants) > 0 {
			v := d.ProductionVariants[0]
			es.ProductionVariant, es.CurrentInstances, es.DesiredInstances = aws.ToString(v.VariantName), aws.ToInt32(v.CurrentInstanceCount), aws.ToInt32(v.DesiredInstanceCount)
		}
		st.Endpoints = append(st.Endpoints, es)
	}
	return st, nil
}

// renderStatusEnv writes only the export lines to stdout, so that `eval "$(speech-infra local status)"`
// works, and the description of the emulator and its endpoints to stderr.
func renderStatusEnv(stdout, stderr io.Writer, st localStatus) error {
	if !st.Running {
		fmt.Fprintf(stderr, "emulator   not running (state %s)\n", st.StateDir)
		return nil
	}
	fmt.Fprintf(stderr, "emulator   %s (pid %d, state %s, since %s, access key id %s)\n", st.URL, st.PID, st.StateDir, st.Started.Format("2006-01-02 15:04:05Z"), st.AccessKeyID)
	for _, e := range st.Endpoints {
		fmt.Fprintf(stderr, "endpoint   %s %s, %d/%d instances\n", e.Name, e.Status, e.CurrentInstances, e.DesiredInstances)
	}
	if err := writeExports(stdout, st.Env); err != nil {
		return fmt.Errorf("print status: %w", err)
	}
	return nil
}

// renderStatusJSON writes the status as one indented JSON object and a newline.
func renderStatusJSON(w io.Writer, st localStatus) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("print status: %w", err)
	}
	return nil
}
