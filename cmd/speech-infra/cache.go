package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/modelsync"
)

// defaultCacheTimeout bounds one `speech-infra cache` run.
const defaultCacheTimeout = 2 * time.Hour

func cacheCommand() *cli.Command {
	return &cli.Command{
		Name:      "cache",
		Usage:     "copy a model's pinned Hugging Face files into a local directory, verified byte for byte (the --model-dir of a local deploy)",
		ArgsUsage: "<model>",
		Description: "Runs the same sync as the SpeechModelCacheStack: lists <repo>@<revision> of the catalog entry through the\n" +
			"Hub's tree API, fetches the files source.files selects, refuses any whose size or SHA-256 differs from what\n" +
			"the Hub states, writes manifest.json last, then verifies the directory as the inference container does at\n" +
			"start. Running it again fetches only what is missing or changed. Progress goes to stderr; the result line\n" +
			"to stdout.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Usage: "directory to fill (created when missing)"},
			&cli.StringFlag{Name: "hf-endpoint", Value: modelsync.DefaultEndpoint, EnvVars: []string{"HF_ENDPOINT"}, Usage: "Hugging Face Hub or a mirror with the same tree/resolve API"},
			&cli.StringFlag{Name: "token-env", Usage: "name of the environment variable that holds a Hugging Face token (gated or private repositories; the token itself never goes on the command line)"},
			&cli.DurationFlag{Name: "timeout", Value: defaultCacheTimeout, Usage: "stop (cleanly, between whole files) after this long; run again to resume"},
		},
		Action: func(c *cli.Context) error {
			cat, err := models.Default()
			if err != nil {
				return err
			}
			o := &cacheOpts{
				args: c.Args().Slice(), to: c.String("to"), endpoint: c.String("hf-endpoint"), tokenEnv: c.String("token-env"),
				timeout: c.Duration("timeout"), catalog: cat, stdout: c.App.Writer, stderr: c.App.ErrWriter, getenv: os.Getenv,
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// cacheOpts is one speech-infra cache: the command line, and what it runs with.
type cacheOpts struct {
	args     []string
	to       string
	endpoint string
	tokenEnv string
	timeout  time.Duration

	catalog models.Catalog
	stdout  io.Writer
	stderr  io.Writer
	getenv  func(string) string

	// model and token are set by Validate.
	model models.Model
	token modelsync.Token
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks the command line and reports every problem at once as one usage error.
func (o *cacheOpts) Validate() error {
	var errs []error
	m, err := catalogModel(o.catalog, "cache", o.args)
	if err != nil {
		errs = append(errs, err)
	} else if m.Source == nil {
		errs = append(errs, fmt.Errorf("%s has no weights to cache: its engine %q synthesizes without model files; deploy it directly (`speech-infra deploy %s --local`)", m.ID, m.Engine, m.ID))
	}
	o.model = m
	if o.to == "" {
		errs = append(errs, errors.New("--to is required: the directory to fill, e.g. --to .state/models/kokoro-82m"))
	}
	if u, err := url.Parse(o.endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		errs = append(errs, fmt.Errorf("--hf-endpoint %q is not an http(s) URL without credentials, query or fragment: use e.g. https://huggingface.co", o.endpoint))
	}
	if o.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s must be positive", o.timeout))
	}
	switch {
	case o.tokenEnv != "" && !envNamePattern.MatchString(o.tokenEnv):
		errs = append(errs, fmt.Errorf("--token-env %q is not an environment variable name: give the name (e.g. HF_TOKEN), never the token itself", o.tokenEnv))
	case o.tokenEnv != "":
		o.token = modelsync.Token(o.getenv(o.tokenEnv))
		if o.token == "" {
			errs = append(errs, fmt.Errorf("--token-env %s: the variable is unset or empty: export the Hugging Face token in it, or leave --token-env out for a public repository", o.tokenEnv))
		}
	case m.Source != nil && m.Source.TokenSecret != "":
		errs = append(errs, fmt.Errorf("%s's repository %s is gated (the catalog names the token secret %s): pass --token-env NAME with a Hugging Face token in $NAME", m.ID, m.Source.Repo, m.Source.TokenSecret))
	}
	return exitcode.Usage(errors.Join(errs...))
}

// Execute syncs the model into the directory and verifies it as the container will.
func (o *cacheOpts) Execute(ctx context.Context) error {
	src := o.model.Source
	dir, err := filepath.Abs(o.to)
	if err != nil {
		return exitcode.Usagef("--to %s: %w", o.to, err)
	}
	logf := func(format string, args ...any) { fmt.Fprintf(o.stderr, format+"\n", args...) }
	res, err := modelsync.Sync(ctx, modelsync.Source{
		Endpoint: o.endpoint, Repo: src.Repo, Revision: src.Revision, Patterns: src.Files, Token: o.token,
	}, modelsync.Dir{Root: dir}, modelsync.Options{Deadline: time.Now().Add(o.timeout), Logf: logf})
	if err != nil {
		var mm *modelsync.MismatchError
		if errors.As(err, &mm) {
			return exitcode.CheckFailed(fmt.Errorf("cache %s: %w", o.model.ID, err))
		}
		if errors.Is(err, modelsync.ErrTokenOverHTTP) {
			// --hf-endpoint names a plain-http origin that is not loopback while a token is set: the user's
			// flags are wrong, nothing was sent.
			return exitcode.Usage(fmt.Errorf("cache %s: --hf-endpoint: %w", o.model.ID, err))
		}
		return fmt.Errorf("cache %s: %w", o.model.ID, err)
	}
	if !res.Done {
		return fmt.Errorf("cache %s: stopped at --timeout %s with %d files fetched: the files in %s are whole and verified; run the same command again to fetch the rest", o.model.ID, o.timeout, len(res.Uploaded), dir)
	}
	man, err := modelsync.VerifyDir(dir)
	if err != nil {
		return exitcode.CheckFailed(fmt.Errorf("cache %s: the directory does not verify after the sync: %w", o.model.ID, err))
	}
	if man.Repo != src.Repo || man.Revision != src.Revision || len(man.Files) != len(res.Manifest.Files) {
		return exitcode.CheckFailed(fmt.Errorf("cache %s: %s in %s names %s@%s with %d files, want %s@%s with %d: another writer changed it; run again", o.model.ID, modelsync.ManifestName, dir, man.Repo, man.Revision, len(man.Files), src.Repo, src.Revision, len(res.Manifest.Files)))
	}
	var total int64
	for _, f := range man.Files {
		total += f.Size
	}
	_, err = fmt.Fprintf(o.stdout, "cached %s (%s@%s): %d files, %d bytes, verified against %s in %s (%d fetched, %d already present)\nuse it with: speech-infra deploy %s --local --model-dir %s\n",
		o.model.ID, src.Repo, src.Revision, len(man.Files), total, modelsync.ManifestName, dir, len(res.Uploaded), len(res.Skipped), o.model.ID, dir)
	return err
}
