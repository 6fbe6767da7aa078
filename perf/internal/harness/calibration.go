package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/cloud"
)

// CalibrationEndpoint is a private emulator in this process with one endpoint of the calibration engine
// deployed on it through the real SDK: what the path benchmarks (the emulator's path, the gateway's) drive
// two ways and compare.
type CalibrationEndpoint struct {
	*Emulator
	// Name is the endpoint's name; Config the SDK configuration that reaches the emulator.
	Name   string
	Config aws.Config
}

// DeployCalibration starts a private emulator running the container bin (its directory named after prefix)
// and deploys endpoint name on it: the calibration engine waiting segmentMs per segment, with workers engine
// workers and no queue shield, so that nothing queues in the instance. who names the program in the line it
// prints to stderr. The caller stops the emulator (Stop).
func DeployCalibration(ctx context.Context, bin, prefix, name string, segmentMs, workers int, who string, stderr io.Writer) (*CalibrationEndpoint, error) {
	pe, err := StartEmulator(ctx, bin, prefix)
	if err != nil {
		return nil, err
	}
	c := &CalibrationEndpoint{Emulator: pe, Name: name, Config: cloud.LocalConfig(pe.URL(), cloud.LocalCredentials(pe.Credentials()))}
	sm := sagemaker.NewFromConfig(c.Config, func(o *sagemaker.Options) { o.BaseEndpoint = aws.String(pe.URL()) })
	env := map[string]string{"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": strconv.Itoa(segmentMs),
		"ENGINE_WORKERS": strconv.Itoa(workers), "QUEUE_MAX_DEPTH": "0", "METRICS_INTERVAL": "60s"}
	fmt.Fprintf(stderr, "%s: emulator at %s, deploying %s (calibration, %d ms per segment, %d engine workers)\n", who, pe.URL(), name, segmentMs, workers)
	if err := Deploy(ctx, sm, Endpoint{Name: name, Env: env}); err != nil {
		err = c.Fail(ctx, err)
		pe.Stop()
		return nil, err
	}
	return c, nil
}

// Fail wraps an error of a run on the endpoint: with the tail of the emulator's log, or, when ctx was
// interrupted, as ErrInterrupted (nothing was written).
func (c *CalibrationEndpoint) Fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %v: nothing written", ErrInterrupted, err)
	}
	return fmt.Errorf("%w\nthe emulator's log (tail):\n%s", err, Tail(c.LogPath, 15))
}

// StreamPath is a path named name that invokes the endpoint with InvokeEndpointWithResponseStream through an
// SDK client of cfg (c.Config, or a copy with its own HTTP client), a new client per worker.
func (c *CalibrationEndpoint) StreamPath(name string, cfg aws.Config) *Path {
	url := c.URL()
	return &Path{Name: name, Transport: &bench.SageMakerStream{Endpoint: c.Name, NewClient: func() bench.StreamInvoker {
		return sagemakerruntime.NewFromConfig(cfg, func(o *sagemakerruntime.Options) { o.BaseEndpoint = aws.String(url) })
	}}}
}

// Drive first checks that every path reaches the same instance: each answers text with audio, the same number
// of audio bytes at the same sample rate where stated (the calibration engine is deterministic), so that what differs is
// the path alone. Then it drives the paths in interleaved rounds (Interleave, explain naming what a failure
// should show besides the emulator's log). An interrupt stays ErrInterrupted; any other error carries the tail
// of the emulator's log (Fail).
func (c *CalibrationEndpoint) Drive(ctx context.Context, paths []*Path, concurrencies []int, rounds int, d time.Duration, text string, progress io.Writer, explain func() string) error {
	got, err := FirstAnswers(ctx, paths, text, CallTimeout)
	if err != nil {
		return c.Fail(ctx, err)
	}
	for i, res := range got {
		if res.AudioBytes == 0 || res.FirstAudio.IsZero() {
			return c.Fail(ctx, fmt.Errorf("first request %s: no audio in the answer (%d bytes)", paths[i].Name, res.Bytes))
		}
		// A raw PCM answer (the OpenAI speech API's pcm) states no sample rate: 0 is no disagreement.
		rateDiffers := res.SampleRate != 0 && got[0].SampleRate != 0 && res.SampleRate != got[0].SampleRate
		if res.AudioBytes != got[0].AudioBytes || rateDiffers {
			return c.Fail(ctx, fmt.Errorf("the answers differ: %s %d audio bytes at %d Hz, %s %d at %d Hz: every path must reach the same container",
				paths[0].Name, got[0].AudioBytes, got[0].SampleRate, paths[i].Name, res.AudioBytes, res.SampleRate))
		}
	}
	if err := Interleave(ctx, paths, concurrencies, rounds, d, text, progress, explain); errors.Is(err, ErrInterrupted) {
		return err
	} else if err != nil {
		return c.Fail(ctx, err)
	}
	return nil
}
