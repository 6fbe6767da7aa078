package harness

import (
	"context"
	"fmt"
	"io"
	"strconv"

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
