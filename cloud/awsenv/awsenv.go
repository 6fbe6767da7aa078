// Package awsenv is the AWS configuration of the tts-bench commands: --local points every client at the
// running local emulator of a state directory (its URL and access key, as speech-infra deploy --local
// prints them); otherwise the SDK's standard chain loads the configuration (environment, shared config and
// credentials files, SSO, IMDS), with --region and --profile overriding it and AWS_ENDPOINT_URL /
// AWS_ENDPOINT_URL_<SERVICE> honoured by the SDK's own loading.
package awsenv

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// DefaultStateDir is the emulator state directory speech-infra uses by default.
var DefaultStateDir = cliflags.DefaultStateDir

// Flag names.
const (
	LocalFlag    = cliflags.LocalName
	StateDirFlag = cliflags.StateDirName
	RegionFlag   = "region"
	ProfileFlag  = "profile"
)

// Flags are the flags every AWS-facing command takes: --local, --state-dir (cliflags), --region, --profile,
// under the --help headings AWS and --local.
func Flags() []cli.Flag {
	return append([]cli.Flag{
		cliflags.Local("use the local emulator of --state-dir (started by speech-infra deploy <model> --local) instead of AWS"),
		cliflags.StateDir("the local emulator's state directory (with --local)"),
	}, cliflags.InCategory(cliflags.CategoryAWS,
		&cli.StringFlag{Name: RegionFlag, Usage: "AWS region (default: the standard chain: AWS_REGION, the profile's region)"},
		&cli.StringFlag{Name: ProfileFlag, Usage: "shared config profile (default: AWS_PROFILE or default)"},
	)...)
}

// Settings say where the AWS clients point.
type Settings struct {
	// Local uses the emulator of StateDir.
	Local bool
	// StateDir is the emulator's state directory.
	StateDir string
	// Region and Profile override the standard chain (not with Local).
	Region, Profile string
}

// FromContext reads the Flags of a command.
func FromContext(c *cli.Context) Settings {
	return Settings{Local: c.Bool(LocalFlag), StateDir: c.String(StateDirFlag), Region: c.String(RegionFlag), Profile: c.String(ProfileFlag)}
}

// Validate lists every problem of the settings, each naming the flag and the fix.
func (s Settings) Validate() []error {
	var errs []error
	if s.Local && s.StateDir == "" {
		errs = append(errs, fmt.Errorf("--%s is empty: give the emulator's state directory or leave the flag out (default %s)", StateDirFlag, DefaultStateDir))
	}
	if s.Local && s.Region != "" && s.Region != cloud.LocalRegion {
		errs = append(errs, fmt.Errorf("--%s %s with --local: the emulator serves %s only: leave --region out", RegionFlag, s.Region, cloud.LocalRegion))
	}
	if s.Local && s.Profile != "" {
		errs = append(errs, fmt.Errorf("--%s %s with --local: the emulator signs with its own key from --state-dir: leave --profile out", ProfileFlag, s.Profile))
	}
	return errs
}

// Args are the flags that point another command where the settings point (tts-bench compare passes them to
// the qmax and ttotal it runs).
func (s Settings) Args() []string {
	if s.Local {
		return []string{"--" + LocalFlag, "--" + StateDirFlag, s.StateDir}
	}
	var a []string
	if s.Region != "" {
		a = append(a, "--"+RegionFlag, s.Region)
	}
	if s.Profile != "" {
		a = append(a, "--"+ProfileFlag, s.Profile)
	}
	return a
}

// Where names what the settings point at, for diagnostics: "the local emulator at http://127.0.0.1:4599" or
// "AWS (us-east-1)".
func Where(s Settings, cfg aws.Config) string {
	if s.Local {
		return "the local emulator at " + aws.ToString(cfg.BaseEndpoint)
	}
	if cfg.BaseEndpoint != nil {
		return fmt.Sprintf("%s (%s)", aws.ToString(cfg.BaseEndpoint), cfg.Region)
	}
	return fmt.Sprintf("AWS (%s)", cfg.Region)
}

// Compression is the CloudWatch compression factor of what the settings point at (docs/design.md, "Compressed
// CloudWatch time"): 1 on AWS; with Local, the factor the running emulator of StateDir publishes (1 from an
// emulator that publishes none). A measurement records it, and the gate compares a plan's with a deployment's.
func (s Settings) Compression(ctx context.Context) (int, error) {
	if !s.Local {
		return 1, nil
	}
	info, ok, err := emulator.Running(s.StateDir)
	if err != nil {
		return 0, fmt.Errorf("find the local emulator of %s: %w", s.StateDir, err)
	}
	if !ok {
		return 0, fmt.Errorf("--local: no emulator runs on the state directory %s: start it with `speech-infra deploy <model> --local` (or name its directory with --%s)", s.StateDir, StateDirFlag)
	}
	return max(1, info.CloudWatchCompression), nil
}

// Config returns the SDK configuration the settings ask for. With Local: the emulator running on StateDir,
// confirmed by its own answer, with its access key (cloud.LocalConfig); none running is an error naming
// speech-infra deploy --local. Otherwise cloud.LoadConfig (the standard chain with AWS_ENDPOINT_URL_*) with
// Region and Profile; a configuration without a region is a usage error naming --region.
func (s Settings) Config(ctx context.Context) (aws.Config, error) {
	if errs := s.Validate(); len(errs) > 0 {
		return aws.Config{}, exitcode.Usage(errors.Join(errs...))
	}
	if s.Local {
		info, ok, err := emulator.Running(s.StateDir)
		if err != nil {
			return aws.Config{}, fmt.Errorf("find the local emulator of %s: %w", s.StateDir, err)
		}
		if !ok {
			return aws.Config{}, fmt.Errorf("--local: no emulator runs on the state directory %s: start it with `speech-infra deploy <model> --local` (or name its directory with --%s)", s.StateDir, StateDirFlag)
		}
		creds, err := emulator.ReadCredentials(s.StateDir)
		if err != nil {
			return aws.Config{}, err
		}
		return cloud.LocalConfig(info.URL, cloud.LocalCredentials(creds)), nil
	}
	var opts []func(*config.LoadOptions) error
	if s.Region != "" {
		opts = append(opts, config.WithRegion(s.Region))
	}
	if s.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(s.Profile))
	}
	cfg, err := cloud.LoadConfig(ctx, opts...)
	if err != nil {
		if s.Profile != "" {
			return aws.Config{}, exitcode.Usagef("--%s %s: %w: name a profile of your shared config files (aws configure list-profiles)", ProfileFlag, s.Profile, err)
		}
		return aws.Config{}, err
	}
	if cfg.Region == "" {
		return aws.Config{}, exitcode.Usagef("no AWS region: give --%s, set AWS_REGION, or give the profile a region; or use --local for the emulator", RegionFlag)
	}
	if cfg.BaseEndpoint == nil { // with AWS_ENDPOINT_URL the region only names the signing scope
		if err := cloud.CheckRegionKnown(cfg.Region); err != nil {
			return aws.Config{}, err
		}
	}
	return cfg, nil
}
