package measure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// session is the control-plane side of a measurement run that qmax and ttotal share: the SDK clients (AWS
// or the local emulator), the drift check before anything changes, the freeze with its journal, and the
// restore at the end, on error and on SIGINT / SIGTERM. Messages go to stderr as "<command> <model>: ...".
type session struct {
	command, model string
	endpoint       string
	variant        string
	journalDir     string
	stderr         io.Writer

	cl     cloud.Clients
	notify func(chan<- os.Signal) (stop func())
}

// Env is what a measuring command (qmax, ttotal) takes from its process, injected through its options as
// cli/cli injects its client factory, so that a test can replace any part of it. The zero value means the
// process's: cloud.NewClients, SIGINT and SIGTERM, no command line.
type Env struct {
	// clients makes the clients for the AWS configuration of --local, --region, --profile.
	Clients ClientFactory
	// notify relays the signals that interrupt a restore to c until stop is called.
	Notify func(c chan<- os.Signal) (stop func())
	// commandLine is the command line the journal records, so that tts-bench drift can name the run.
	CommandLine string
}

// NotifySignals relays SIGINT and SIGTERM to c until stop.
func NotifySignals(c chan<- os.Signal) (stop func()) {
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	return func() { signal.Stop(c) }
}

// ClientFactory makes the clients a command works through for an AWS configuration: cloud.NewClients, or in
// a test one that hands out cloudtest doubles (cli/cli's injected factory, karpenter's fake provider).
type ClientFactory func(aws.Config) cloud.Clients

// ClientsFor makes the clients for cfg with factory, or with cloud.NewClients when factory is nil.
func ClientsFor(factory ClientFactory, cfg aws.Config) cloud.Clients {
	if factory == nil {
		factory = cloud.NewClients
	}
	return factory(cfg)
}

// newSession makes the clients for the AWS configuration config loads (--local, --region, --profile) with env's
// factory.
func newSession(ctx context.Context, command, model, endpoint, variant, journalDir string, config func(context.Context) (aws.Config, error), env Env, stderr io.Writer) (*session, error) {
	cfg, err := config(ctx)
	if err != nil {
		return nil, err
	}
	notify := env.Notify
	if notify == nil {
		notify = NotifySignals
	}
	return &session{
		command: command, model: model, endpoint: endpoint, variant: variant, journalDir: journalDir, stderr: stderr,
		cl: ClientsFor(env.Clients, cfg), notify: notify,
	}, nil
}

// prefix is what every message of the session starts with, e.g. "qmax espeak-ng".
func (s *session) prefix() string { return s.command + " " + s.model }

// freezeClients are the clients Freeze and Restore work through.
func (s *session) freezeClients() cloud.FreezeClients { return s.cl.Freeze() }

// streamTransport sends probe or staircase requests with InvokeEndpointWithResponseStream to the session's
// endpoint.
func (s *session) streamTransport() bench.Transport {
	// One client per worker: a client's event-stream decoder races when several streams are open on it
	// (aws/smithy-go#714).
	return s.cl.StreamTransport(s.endpoint)
}

// checkDrift runs drift and refuses (exit 1) on an error-level finding unless force, when it warns. why
// says what the findings would spoil, e.g. "a measurement now would not measure one pinned, undisturbed
// instance".
//
// First it refuses an endpoint another run has marked (cloud.CheckMarker): drift alone would say only that
// scaling is suspended, not which run holds the endpoint; force passes an expired marker only.
func (s *session) checkDrift(ctx context.Context, o cloud.DriftOptions, force bool, why string) error {
	if err := s.checkMarker(ctx, force); err != nil {
		return err
	}
	rep, err := cloud.Drift(ctx, s.cl.Drift(), o)
	if err != nil {
		return fmt.Errorf("%s: check drift: %w", s.prefix(), err)
	}
	if rep.Clean() {
		return nil
	}
	var lines []string
	for _, f := range rep.Findings {
		if f.Severity == cloud.SeverityError {
			lines = append(lines, fmt.Sprintf("  %s %s: %s → %s", f.Code, f.Subject, f.Detail, f.Remediation))
		}
	}
	if !force {
		return exitcode.CheckFailedf("%s: drift found %d error(s): %s:\n%s\nrepair them (tts-bench drift --model %s shows all) or pass --force",
			s.prefix(), rep.Errors(), why, strings.Join(lines, "\n"), s.model)
	}
	fmt.Fprintf(s.stderr, "%s: warning: --force: measuring despite %d drift error(s):\n%s\n", s.prefix(), rep.Errors(), strings.Join(lines, "\n"))
	return nil
}

// checkMarker refuses (exit 1) an endpoint that carries another run's measurement marker, naming the run, its
// owner, start and expiry; force passes an expired one (Freeze then replaces it, with a warning). An endpoint
// that cannot be described is left to drift and the preflight to report.
func (s *session) checkMarker(ctx context.Context, force bool) error {
	st, err := cloud.ReadEndpoint(ctx, s.cl.SageMaker, s.endpoint, s.variant)
	if err != nil {
		return nil
	}
	found, err := cloud.ReadMarker(ctx, s.cl.SageMaker, aws.ToString(st.Output.EndpointArn))
	if err != nil {
		return fmt.Errorf("%s: %w", s.prefix(), err)
	}
	if err := cloud.CheckMarker(found, s.endpoint, force, time.Now()); err != nil {
		return exitcode.CheckFailed(fmt.Errorf("%s: %w", s.prefix(), err))
	}
	return nil
}

// freeze writes the journal, marks the endpoint as this run's (the speech-infra:measurement tag, expiring
// bound plus cloud.MarkerMargin from now), suspends dynamic scaling and pins the variant to instances
// (cloud.Freeze). It refuses (exit 1) an endpoint another run has marked or whose scaling is already
// suspended; force (--force) overrides an expired marker only, with a warning.
// When freezing fails after the journal was written, Freeze puts the endpoint back itself, but on ctx: after
// SIGINT or SIGTERM that restore cannot run. So any journal of this run that is left is restored here, on a
// context of its own.
func (s *session) freeze(ctx context.Context, runID, commandLine string, instances int32, bound time.Duration, force bool) (*cloud.Frozen, error) {
	frozen, err := cloud.Freeze(ctx, s.freezeClients(), cloud.FreezeOptions{
		JournalDir: s.journalDir, Endpoint: s.endpoint, Variant: s.variant, Instances: instances,
		RunID: runID, Command: commandLine, Duration: bound, OverrideExpired: force,
	})
	if err == nil {
		if o := frozen.Overridden; o != nil {
			fmt.Fprintf(s.stderr, "%s: warning: --force: replaced the expired measurement marker of %s\n", s.prefix(), o.Describe(time.Now()))
		}
		fmt.Fprintf(s.stderr, "%s: marked %s as run %s's (tag %s, owner %s, expires %s)\n", s.prefix(), s.endpoint, runID,
			cloud.MarkerTagKey, frozen.Marker.Owner, frozen.Marker.Expires.Format(time.RFC3339))
		return frozen, nil
	}
	err = fmt.Errorf("%s: %w", s.prefix(), err)
	path, _ := cloud.JournalPath(s.journalDir, s.endpoint)
	if j, jerr := cloud.ReadJournal(path); jerr == nil && j.RunID == runID {
		return nil, errors.Join(err, s.restore(&cloud.Frozen{Journal: j, Path: path}))
	}
	return nil, err
}

// restore puts the endpoint back from the journal and removes it. It runs on its own context, bounded by
// restoreTimeout, because the run's context is already canceled after SIGINT or SIGTERM. A further signal
// while it runs is answered, not obeyed silently: the first says restoring goes on, the next abandons the
// restore and says that the journal stays for tts-bench thaw.
func (s *session) restore(fr *cloud.Frozen) error {
	ctx, cancel := context.WithTimeout(context.Background(), restoreTimeout)
	defer cancel()
	sigs := make(chan os.Signal, 2)
	defer s.notify(sigs)()
	type result struct {
		res cloud.RestoreResult
		err error
	}
	done := make(chan result, 1)
	fmt.Fprintf(s.stderr, "%s: restoring %s from the journal %s\n", s.prefix(), fr.Journal.Endpoint, fr.Path)
	go func() {
		res, err := cloud.Restore(ctx, s.freezeClients(), fr.Path, cloud.WaitOptions{})
		done <- result{res, err}
	}()
	thaw := fmt.Sprintf("tts-bench thaw --endpoint %s", fr.Journal.Endpoint)
	signals := 0
	for {
		select {
		case r := <-done:
			if r.err != nil {
				if signals > 1 {
					return fmt.Errorf("%s: restore abandoned on a second signal: the journal %s stays: run %s: %w", s.prefix(), fr.Path, thaw, r.err)
				}
				return fmt.Errorf("%s: %w", s.prefix(), r.err)
			}
			what := "nothing to change"
			if len(r.res.Changes) > 0 {
				what = strings.Join(r.res.Changes, ", ")
			}
			fmt.Fprintf(s.stderr, "%s: restored %s (%s); journal removed\n", s.prefix(), fr.Journal.Endpoint, what)
			for _, n := range r.res.Notes {
				fmt.Fprintf(s.stderr, "%s: note: %s\n", s.prefix(), n)
			}
			return nil
		case <-sigs:
			signals++
			if signals == 1 {
				fmt.Fprintf(s.stderr, "%s: still restoring %s (at most %s): interrupt again to abandon the restore; the journal %s then stays for %s\n",
					s.prefix(), fr.Journal.Endpoint, restoreTimeout, fr.Path, thaw)
				continue
			}
			if signals == 2 {
				fmt.Fprintf(s.stderr, "%s: abandoning the restore: the journal %s stays: run %s\n", s.prefix(), fr.Path, thaw)
				cancel() // Restore returns promptly once its context ends; the loop then reports it
			}
		}
	}
}
