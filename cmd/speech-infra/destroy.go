package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
)

func destroyCommand() *cli.Command {
	return &cli.Command{
		Name:      "destroy",
		Usage:     "remove a model's endpoint, its scaling and alarms (on AWS through the CDK app; --local: from the emulator)",
		ArgsUsage: "<model>",
		Description: "On AWS: asks for confirmation (unless --yes), then `cdk destroy SpeechEndpointStack-<model>` removes the\n" +
			"model, endpoint config, endpoint, scaling target, policies, alarms and dashboard. The foundation (weights bucket,\n" +
			"execution role), the model's weights cache and the image in the CDK bootstrap repository stay; it says how to\n" +
			"remove them. Both refuse while a freeze journal of the endpoint exists (a measurement is running or was\n" +
			"killed): run `tts-bench thaw` first, or pass --force. --local never starts the emulator: with none running on\n" +
			"--state-dir there is nothing to remove, unless its stopped state holds the endpoint (then it says how to remove it).",
		Flags: append([]cli.Flag{
			cliflags.Local("remove it from the local emulator (never starts one: with none running there is nothing to remove)"),
			cliflags.InCategory(cliflags.CategoryAWS, &cli.BoolFlag{Name: "yes", Usage: "destroy without asking"})[0],
			cliflags.Force("destroy even while a freeze journal of the endpoint exists (its measurement's restore is lost)"),
			cliflags.JournalDir(cloud.DefaultJournalDir, "directory of the freeze journals"),
			stateDirFlag, portFlag, containerBin,
		}, awsFlags()...),
		Action: func(c *cli.Context) error {
			cat, err := models.Default()
			if err != nil {
				return err
			}
			o := &destroyOpts{
				args: c.Args().Slice(), local: c.Bool("local"), emulator: settingsFrom(c), catalog: cat,
				stdout: c.App.Writer, attach: attachEmulator, clients: destroyClientsFor,
				stderr: c.App.ErrWriter, yes: c.Bool("yes"), force: c.Bool("force"), journalDir: c.String("journal-dir"), aws: awsSettingsFrom(c),
				stdin: os.Stdin, stdinIsTerminal: isTerminal(os.Stdin), runner: execRunner{}, preflightEnv: loadPreflightEnv,
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

	// yes skips the question (AWS); force destroys despite a journal.
	yes, force bool
	journalDir string
	aws        awsSettings
	// stdin answers the question when stdinIsTerminal.
	stdin           io.Reader
	stdinIsTerminal bool
	runner          programRunner
	preflightEnv    func(ctx context.Context, s awsSettings, timeout time.Duration) preflightEnv
	checkTimeout    time.Duration

	catalog        models.Catalog
	stdout, stderr io.Writer
	// attach returns the emulator running on a state directory, and false when none runs; it never starts one.
	attach func(dir string) (localEmulator, bool, error)
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
	id := m.ID
	if id == "" {
		id = "<model>"
	}
	if o.journalDir == "" {
		errs = append(errs, errors.New("--journal-dir is empty: give the directory of the freeze journals or leave the flag out (default "+cloud.DefaultJournalDir+")"))
	}
	if o.local {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--yes", o.yes}, {"--region", o.aws.region != ""}, {"--profile", o.aws.profile != ""}} {
			if f.set {
				errs = append(errs, fmt.Errorf("%s is for a destroy on AWS: leave it out with --local (which never asks), or drop --local to destroy %s on AWS", f.name, id))
			}
		}
		errs = append(errs, o.emulator.validate()...)
	} else {
		errs = append(errs, o.aws.validate()...)
		if !o.yes && !o.stdinIsTerminal {
			errs = append(errs, fmt.Errorf("destroy %s on AWS asks for confirmation, but stdin is not a terminal: pass --yes to destroy without asking", id))
		}
	}
	return exitcode.Usage(errors.Join(errs...))
}

// Execute refuses while a freeze journal of the endpoint exists (unless --force), then destroys on AWS
// (executeAWS) or on the emulator. On the emulator it does not ask: local resources cost nothing and deploy
// recreates them in seconds. An endpoint that does not exist is not an error.
func (o *destroyOpts) Execute(ctx context.Context) error {
	if err := o.refuseWhileJournaled(); err != nil {
		return err
	}
	if !o.local {
		return o.executeAWS(ctx)
	}
	emu, running, err := o.attach(o.emulator.stateDir)
	if err != nil {
		return err
	}
	if !running {
		return o.notRunning()
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

// attachEmulator returns the emulator that runs on dir, and false when none does: destroy --local never starts
// one, since an emulator it started to remove nothing would be left running.
func attachEmulator(dir string) (localEmulator, bool, error) {
	info, ok, err := emulator.Running(dir)
	switch {
	case err != nil:
		return localEmulator{}, ok, fmt.Errorf("find the emulator of %s: %w", dir, err)
	case !ok:
		return localEmulator{}, false, nil
	}
	emu, err := attach(dir, info)
	return emu, err == nil, err
}

// notRunning is destroy --local when no emulator runs on the state directory: with no state, or a state
// without the endpoint, there is nothing to remove (exit 0); a stopped emulator whose state holds the endpoint
// would restart it on its next start, so that fails (exit 1) saying how to remove it.
func (o *destroyOpts) notRunning() error {
	dir, name := o.emulator.stateDir, o.model.EndpointName()
	held, err := stateHoldsEndpoint(dir, name)
	if err != nil {
		return err
	}
	if !held {
		_, err = fmt.Fprintf(o.stdout, "no emulator runs on %s and its state holds no endpoint %s: nothing to remove\n", dir, name)
		return err
	}
	return exitcode.CheckFailedf("destroy %s --local: no emulator runs on %s, and its state holds endpoint %s (the next start restarts it): start the emulator (`speech-infra local serve --state-dir %s`, or any deploy --local) and destroy again, or remove %s to drop every local endpoint",
		o.model.ID, dir, name, dir, dir)
}

// stateHoldsEndpoint says whether the state file a stopped emulator left in dir (state.json, the emulator's
// own format: its "endpoints" object is keyed by endpoint name) holds endpoint name. No file holds none.
func stateHoldsEndpoint(dir, name string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the emulator state in %s: %w", dir, err)
	}
	var st struct {
		Endpoints map[string]json.RawMessage `json:"endpoints"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return false, fmt.Errorf("read the emulator state %s: %w: repair or remove the file", filepath.Join(dir, "state.json"), err)
	}
	_, ok := st.Endpoints[name]
	return ok, nil
}

// refuseWhileJournaled fails (exit 1) while a freeze journal of the model's endpoint exists: a measurement is
// running, or one was killed and its restore is pending; destroying would lose what thaw restores. A
// journal that cannot be read counts as present. --force goes on, saying what is lost.
func (o *destroyOpts) refuseWhileJournaled() error {
	ep := o.model.EndpointName()
	path, err := cloud.JournalPath(o.journalDir, ep)
	if err != nil {
		return exitcode.Usage(fmt.Errorf("--journal-dir: %w", err))
	}
	_, err = os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("look for the freeze journal %s: %w: fix its directory's permissions, or pass --journal-dir", path, err)
	}
	if o.force {
		fmt.Fprintf(o.stderr, "warning: --force: destroying %s although its freeze journal %s exists; delete the journal afterwards (tts-bench drift keeps reporting it)\n", ep, path)
		return nil
	}
	what := "a measurement is running on it, or one was interrupted before it restored the endpoint"
	if j, err := cloud.ReadJournal(path); err == nil {
		what = fmt.Sprintf("%q (pid %d, run %s) froze it at %s and has not restored it", j.Command, j.PID, j.RunID, j.Created.Format(time.RFC3339))
	}
	local := ""
	if o.local {
		local = " --local"
	}
	return exitcode.CheckFailedf("destroy %s: refused: freeze journal %s exists: %s: wait for the measurement to end, or run `tts-bench thaw --model %s%s` to restore the endpoint, then destroy; --force destroys anyway",
		o.model.ID, path, what, o.model.ID, local)
}

// isTerminal reports whether f is a terminal (/dev/null, a character device too, is not).
func isTerminal(f *os.File) bool { return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()) }

// confirm asks on stderr whether to destroy and reads one line from stdin: "yes" or "y" confirms. A stdin
// that is not a terminal is refused (a script must say --yes); the context's end (Ctrl-C) stops the wait.
func (o *destroyOpts) confirm(ctx context.Context, question string) error {
	if !o.stdinIsTerminal {
		return exitcode.Usagef("destroy %s asks for confirmation, but stdin is not a terminal: pass --yes to destroy without asking", o.model.ID)
	}
	fmt.Fprintf(o.stderr, "%s [y/N] ", question)
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(o.stdin).ReadString('\n')
		answer <- strings.TrimSpace(line)
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(o.stderr)
		return fmt.Errorf("destroy %s: interrupted while asking: nothing was destroyed", o.model.ID)
	case a := <-answer:
		switch strings.ToLower(a) {
		case "y", "yes":
			return nil
		}
		return exitcode.CheckFailedf("destroy %s: not confirmed (answer %q): nothing was destroyed; answer y, or pass --yes", o.model.ID, a)
	}
}

// executeAWS checks the tools and the credentials (a short preflight: no Docker, bootstrap or quota), asks
// for confirmation unless --yes, destroys the endpoint stack with the CDK CLI, and says what remains.
func (o *destroyOpts) executeAWS(ctx context.Context) error {
	timeout := o.checkTimeout
	if timeout <= 0 {
		timeout = cloud.DefaultCheckTimeout
	}
	env := o.preflightEnv(ctx, o.aws, timeout)
	r := cloud.Preflight(ctx, o.runner, env.clients, cloud.PreflightOptions{
		AppDir: o.aws.appDir, Region: env.region, ConfigErr: env.configErr, SkipDocker: true, SkipAccount: true, Timeout: timeout,
	})
	if !r.OK() {
		if err := renderPreflight(o.stderr, "destroy "+o.model.ID+" on "+regionWords(r), r); err != nil {
			return fmt.Errorf("write the preflight: %w", err)
		}
		return exitcode.CouldNotRunf("destroy %s: %d precondition(s) failed, nothing was destroyed: apply the fixes above and run it again", o.model.ID, r.Problems())
	}
	stack := endpointStack(o.model.ID)
	if !o.yes {
		q := fmt.Sprintf("Destroy %s in %s: endpoint %s with its model, endpoint config, scaling, alarms and dashboard?", stack, regionWords(r), o.model.EndpointName())
		if err := o.confirm(ctx, q); err != nil {
			return err
		}
	}
	cmd := destroyCommandFor(o.aws.target(), o.model)
	fmt.Fprintf(o.stderr, "running: %s\n", cmd)
	if err := o.runner.Stream(ctx, cmd, o.stdin, o.stderr, o.stderr); err != nil {
		return exitcode.CheckFailedf("destroy %s: %w: CDK's output above says why; run the destroy again once the cause is fixed", o.model.ID, err)
	}
	return renderDestroyedAWS(o.stdout, o.model, r)
}

// renderDestroyedAWS says what the destroy removed and what remains, with how to remove it.
func renderDestroyedAWS(w io.Writer, m models.Model, r cloud.PreflightReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "destroyed %s: endpoint %s, its model, endpoint config, scaling target, policies, alarms and dashboard\n", endpointStack(m.ID), m.EndpointName())
	b.WriteString("remains (shared, or kept on purpose):\n")
	if m.Source != nil {
		fmt.Fprintf(&b, "  %s: the synced weights under %s in the weights bucket; remove the stack with\n", modelCacheStack(m.ID), m.WeightsPrefix())
		fmt.Fprintf(&b, "    npx cdk destroy %s -c model=%s --exclusively   (the objects stay: delete them with aws s3 rm --recursive)\n", modelCacheStack(m.ID), m.ID)
	}
	fmt.Fprintf(&b, "  %s: the weights bucket (retained on delete) and the execution role, shared by every model; once no model\n", foundationStack)
	fmt.Fprintf(&b, "    is deployed: npx cdk destroy %s -c model=%s, then empty and delete the bucket it names (aws s3 rb s3://<bucket> --force)\n", foundationStack, m.ID)
	account, region := r.Account, r.Region
	if account == "" {
		account = "<account>"
	}
	if region == "" {
		region = "<region>"
	}
	fmt.Fprintf(&b, "  the container image in the CDK bootstrap repository cdk-hnb659fds-container-assets-%s-%s, shared by every CDK app;\n", account, region)
	b.WriteString("    the bootstrap stack (CDKToolkit) owns it: delete old images from the repository, or the stack when nothing else uses it\n")
	_, err := io.WriteString(w, b.String())
	return err
}
