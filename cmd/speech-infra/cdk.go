package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/logging"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/models"
)

// Stack names of the CDK app (stacks.FoundationStackName, stacks.ModelCacheStackName,
// stacks.EndpointStackName). They are repeated here so the CLI does not link the jsii runtime; the synth
// test runs the real CDK CLI with these names, which fails on a stack the app does not define.
const foundationStack = "SpeechFoundationStack"

func modelCacheStack(id string) string { return "SpeechModelCacheStack-" + id }

func endpointStack(id string) string { return "SpeechEndpointStack-" + id }

// modelStacks are the stacks a deploy of m creates or updates, in dependency order: the foundation, the
// weights cache when the model has weights, the endpoint.
func modelStacks(m models.Model) []string {
	s := []string{foundationStack}
	if m.Source != nil {
		s = append(s, modelCacheStack(m.ID))
	}
	return append(s, endpointStack(m.ID))
}

// cdkCommand is one run of the CDK CLI: the program, its arguments, the directory it runs in (the CDK app's,
// with cdk.json) and the variables added to the environment.
type cdkCommand struct {
	Dir  string
	Path string
	Args []string
	Env  []string
}

// String is the command as a user would type it in Dir: variables, program and arguments, shell-quoted.
func (c cdkCommand) String() string {
	var parts []string
	for _, e := range c.Env {
		parts = append(parts, shellQuote(e))
	}
	parts = append(parts, shellQuote(c.Path))
	for _, a := range c.Args {
		parts = append(parts, shellQuote(a))
	}
	s := strings.Join(parts, " ")
	if c.Dir != "" && c.Dir != "." {
		s = "cd " + shellQuote(c.Dir) + " && " + s
	}
	return s
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:@,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// cdkTarget is where and how the CDK CLI deploys: the app directory and the AWS settings passed on to it.
type cdkTarget struct {
	appDir  string
	region  string
	profile string
}

func (t cdkTarget) command(args ...string) cdkCommand {
	c := cdkCommand{Dir: t.appDir, Path: filepath.Join("node_modules", ".bin", "cdk"), Args: args}
	if t.region != "" {
		// The CDK CLI reads the region like the SDKs; it also hands it to the app as CDK_DEFAULT_REGION.
		c.Env = append(c.Env, "AWS_REGION="+t.region)
	}
	if t.profile != "" {
		c.Args = append(c.Args, "--profile", t.profile)
	}
	return c
}

// deployCommandFor is the `cdk deploy` of a model's stacks with the context the app reads: -c model, -c plan
// (the plan the gate reads) and, when given, -c instance_type (a type other than the catalog's) and
// -c autoscaling. yes adds --require-approval never (otherwise CDK asks before it widens IAM permissions).
func deployCommandFor(t cdkTarget, m models.Model, planPath, instanceType string, autoscaling *bool, yes bool) cdkCommand {
	args := append([]string{"deploy"}, modelStacks(m)...)
	args = append(args, "-c", "model="+m.ID, "-c", "plan="+planPath)
	if instanceType != "" {
		args = append(args, "-c", "instance_type="+instanceType)
	}
	if autoscaling != nil {
		args = append(args, "-c", fmt.Sprintf("autoscaling=%t", *autoscaling))
	}
	if yes {
		args = append(args, "--require-approval", "never")
	}
	return t.command(args...)
}

// destroyCommandFor is the `cdk destroy` of a model's endpoint stack alone (--exclusively), without CDK's own
// question (--force: speech-infra destroy asked already).
func destroyCommandFor(t cdkTarget, m models.Model) cdkCommand {
	return t.command("destroy", endpointStack(m.ID), "-c", "model="+m.ID, "--exclusively", "--force")
}

// programRunner runs the programs deploy and destroy need: short checks whose output is read (the preflight),
// and the CDK CLI with its output streamed to the user. Tests record the commands instead.
type programRunner interface {
	cloud.ProgramRunner
	Stream(ctx context.Context, c cdkCommand, stdin io.Reader, stdout, stderr io.Writer) error
}

// execRunner runs programs with os/exec.
type execRunner struct{}

// cdkStopGrace is how long the CDK CLI has after an interrupt to stop before it is killed; CloudFormation
// goes on with a stack operation that already started either way.
const cdkStopGrace = 30 * time.Second

// Output runs name with args in dir and returns what it printed; the context's end kills it, and its output
// pipes are closed at most a second later even when a child of it still holds them.
func (execRunner) Output(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil && ctx.Err() != nil {
		return out, fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return out, err
}

// Stream runs c with the given standard streams. The context's end (Ctrl-C, SIGTERM) interrupts the CDK CLI
// like Ctrl-C in a terminal would, and kills it if it has not stopped within cdkStopGrace.
func (execRunner) Stream(ctx context.Context, c cdkCommand, stdin io.Reader, stdout, stderr io.Writer) error {
	// A relative Path resolves in Dir (the child changes directory before it executes), as String shows it.
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = cdkStopGrace
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("%s %s: interrupted (%v)", c.Path, c.Args[0], err)
	case errors.As(err, &exit):
		return fmt.Errorf("%s %s: %v", c.Path, c.Args[0], err)
	}
	return fmt.Errorf("run %s: %w", c.Path, err)
}

// awsFlags are the flags of the AWS side of deploy and destroy.
func awsFlags() []cli.Flag {
	return cliflags.InCategory(cliflags.CategoryAWS,
		&cli.StringFlag{Name: "region", Usage: "AWS region (default: the standard chain: AWS_REGION, the profile's region); passed to the CDK CLI as AWS_REGION"},
		&cli.StringFlag{Name: "profile", Usage: "shared config profile (default: AWS_PROFILE or default); passed to the CDK CLI as --profile"},
		&cli.StringFlag{Name: "app-dir", Value: ".", Usage: "directory of the CDK app (cdk.json, node_modules/.bin/cdk): the repository root"},
	)
}

// awsSettings are the AWS flags of one command.
type awsSettings struct {
	region, profile, appDir string
}

func awsSettingsFrom(c *cli.Context) awsSettings {
	return awsSettings{region: c.String("region"), profile: c.String("profile"), appDir: c.String("app-dir")}
}

func (s awsSettings) target() cdkTarget {
	return cdkTarget{appDir: s.appDir, region: s.region, profile: s.profile}
}

// validate lists the problems of the AWS flags.
func (s awsSettings) validate() []error {
	if s.appDir == "" {
		return []error{errors.New("--app-dir is empty: give the directory with cdk.json (the repository root) or leave the flag out")}
	}
	return nil
}

// preflightEnv is what the preflight runs against: the AWS clients of the loaded configuration, its region,
// and the error of loading it (a missing profile) for the report.
type preflightEnv struct {
	clients   cloud.PreflightClients
	region    string
	configErr error
}

// loadPreflightEnv loads the AWS configuration of s (bounded by timeout: the shared files, SSO and process
// credentials are read lazily, but a broken profile fails here). The SDK's own log is silenced: without
// credentials the chain warns about the instance metadata service on every call, and the preflight reports
// that failure itself, with its fix.
func loadPreflightEnv(ctx context.Context, s awsSettings, timeout time.Duration) preflightEnv {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{})}
	if s.region != "" {
		opts = append(opts, config.WithRegion(s.region))
	}
	if s.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(s.profile))
	}
	cfg, err := cloud.LoadConfig(ctx, opts...)
	if err != nil {
		return preflightEnv{region: s.region, configErr: err}
	}
	return preflightEnv{region: cfg.Region, clients: cloud.PreflightClients{
		STS: sts.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg), Quotas: servicequotas.NewFromConfig(cfg), SageMaker: sagemaker.NewFromConfig(cfg),
	}}
}

// renderPreflight writes the report as a table, one row per check, the fix on its own line under a row that
// did not pass, and a last line that counts the problems.
func renderPreflight(w io.Writer, title string, r cloud.PreflightReport) error {
	nameW := len("CHECK")
	for _, c := range r.Checks {
		nameW = max(nameW, len(c.Name))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "preflight: %s\n", title)
	fmt.Fprintf(&b, "  %-7s  %-*s  %s\n", "STATUS", nameW, "CHECK", "DETAIL")
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "  %-7s  %-*s  %s\n", c.Status, nameW, c.Name, c.Detail)
		if c.Status != cloud.PreflightOK && c.Fix != "" {
			fmt.Fprintf(&b, "  %-7s  %-*s  fix: %s\n", "", nameW, "", c.Fix)
		}
	}
	if n := r.Problems(); n > 0 {
		fmt.Fprintf(&b, "preflight: %d of %d checks did not pass\n", n, len(r.Checks))
	} else {
		fmt.Fprintf(&b, "preflight: all %d checks passed\n", len(r.Checks))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
