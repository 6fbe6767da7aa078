package measure

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/cloud/cloudtest"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// NotifySignals relays SIGTERM until stopped.
func TestNotifySignalsRelaysSIGTERM(t *testing.T) {
	c := make(chan os.Signal, 1)
	stop := NotifySignals(c)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if s := <-c; s != syscall.SIGTERM {
		t.Errorf("got %v, want SIGTERM", s)
	}
}

// The session works through the clients of the injected factory (cli/cli's factory, karpenter's fake
// provider): an endpoint another run has marked is refused, naming that run, with no call reaching AWS.
func TestSessionWorksThroughTheInjectedClients(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	other := cloud.Marker{RunID: "qmax-other", Owner: "alice@box", PID: 12, Started: now, Expires: now.Add(time.Hour)}
	var gotCfg aws.Config
	sm := &cloudtest.SageMaker{
		DescribeEndpointFn: func(_ context.Context, in *sagemaker.DescribeEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
			return &sagemaker.DescribeEndpointOutput{EndpointName: in.EndpointName, EndpointArn: aws.String("arn:aws:sagemaker:eu-west-1:1:endpoint/speech-espeak-ng"),
				EndpointStatus: smtypes.EndpointStatusInService}, nil
		},
		ListTagsFn: func(context.Context, *sagemaker.ListTagsInput, ...func(*sagemaker.Options)) (*sagemaker.ListTagsOutput, error) {
			return &sagemaker.ListTagsOutput{Tags: []smtypes.Tag{{Key: aws.String(cloud.MarkerTagKey), Value: aws.String(other.Value())}}}, nil
		},
	}
	env := Env{Clients: func(cfg aws.Config) cloud.Clients {
		gotCfg = cfg
		return cloud.Clients{SageMaker: sm}
	}}
	sess, err := newSession(context.Background(), "qmax", "espeak-ng", "speech-espeak-ng", "AllTraffic", t.TempDir(),
		awsenv.Settings{Region: "eu-west-1"}.Config, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if gotCfg.Region != "eu-west-1" {
		t.Errorf("the factory got region %q, want --region's eu-west-1", gotCfg.Region)
	}
	err = sess.checkMarker(context.Background(), false)
	if err == nil || !strings.Contains(err.Error(), "qmax-other") || !errors.Is(err, cloud.ErrEndpointInUse) || exitcode.Code(err) != exitcode.CodeCheckFailed {
		t.Errorf("a marked endpoint: %v, want exit 1 naming run qmax-other", err)
	}
}
