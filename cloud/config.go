// Package cloud holds the control-plane operations speech-infra and tts-bench perform through aws-sdk-go-v2,
// each behind a small interface that the SDK clients satisfy, so one code path serves AWS and the local
// emulator.
package cloud

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// LocalRegion is the region of the local emulator.
const LocalRegion = "us-east-1"

// LocalCredentials are the access key of one local emulator (emulator.Credentials converts to it). The
// emulator generates the key at its first start, keeps it in its state directory readable by its owner only,
// and refuses every request signed with another access key id; it does not verify signatures.
type LocalCredentials struct {
	// AccessKeyID is the key id the emulator accepts.
	AccessKeyID string
	// SecretAccessKey is what the SDK signs with.
	SecretAccessKey string
}

// LocalEnv returns the environment variables that point the SDK (and the AWS CLI) at the emulator at url
// with its access key. The region is given twice: the SDKs read AWS_REGION, the AWS CLI v1 (botocore) reads
// AWS_DEFAULT_REGION.
func LocalEnv(url string, creds LocalCredentials) [][2]string {
	return [][2]string{
		{"AWS_ENDPOINT_URL", url},
		{"AWS_REGION", LocalRegion},
		{"AWS_DEFAULT_REGION", LocalRegion},
		{"AWS_ACCESS_KEY_ID", creds.AccessKeyID},
		{"AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey},
	}
}

// LocalConfig is the SDK configuration for the emulator at url: the emulator's access key, region us-east-1,
// every service's base endpoint at url, the HTTP client of HTTPClient and the retryer of NewRetryer.
func LocalConfig(url string, creds LocalCredentials) aws.Config {
	return aws.Config{
		Region:       LocalRegion,
		Credentials:  credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, ""),
		BaseEndpoint: aws.String(url),
		HTTPClient:   HTTPClient(),
		Retryer:      NewRetryer,
	}
}

// LoadConfig loads the default SDK configuration (environment, shared files, IMDS; optFns such as
// config.WithRegion and config.WithSharedConfigProfile override them) with the HTTP client of HTTPClient.
func LoadConfig(ctx context.Context, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
	// The default chain builds its own client first (it must be the SDK's buildable client to take a custom CA
	// bundle from AWS_CA_BUNDLE); the body-owning wrapper goes around whatever it built.
	cfg, err := config.LoadDefaultConfig(ctx, optFns...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = awshttp.NewBuildableClient()
	}
	if bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		cfg.HTTPClient = pooled(bc)
	}
	cfg.HTTPClient = ownBodyClient{base: cfg.HTTPClient}
	if cfg.Retryer == nil {
		// Unless AWS_RETRY_MODE / AWS_MAX_ATTEMPTS or the shared config chose one (throttle.go).
		cfg.Retryer = NewRetryer
	}
	return cfg, nil
}

// IdleConnsPerHost is how many idle connections the SDK client of this project keeps to one host. A
// measurement holds up to bench.MaxConcurrency streams to one endpoint; the SDK's default of 10
// (awshttp.DefaultHTTPTransportMaxIdleConnsPerHost) closes every connection past the tenth when its response
// ends, so the next request on it dials again and pays a TCP and TLS handshake inside its TTFAB, which a Q_max
// measured at C > 10 would charge to the endpoint (BENCHMARKS.md row 4 showed the re-dials on the emulator).
const IdleConnsPerHost = 4096

// pooled keeps IdleConnsPerHost idle connections per host (and no lower limit over all hosts).
func pooled(c *awshttp.BuildableClient) *awshttp.BuildableClient {
	return c.WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 0, IdleConnsPerHost
	})
}

// HTTPClient returns an SDK HTTP client that hands the transport its own copy of each request body.
//
// Subtleness ahead: smithy-go closes the request body as soon as the response headers arrive. When a server
// answers quickly (a streaming endpoint does), net/http's write loop may still be checking the body for extra
// bytes; reading the closed body fails and the transport tears the connection down under the response being
// read ("use of closed network connection", aws/aws-sdk-go-v2#2737). Buffered calls are retried by the SDK, a
// response stream cannot be. Request payloads here are small JSON documents, so copying them is cheap.
//
// It keeps IdleConnsPerHost idle connections per host, so a measurement's streams reuse their connections.
func HTTPClient() aws.HTTPClient {
	return ownBodyClient{base: pooled(awshttp.NewBuildableClient())}
}

type ownBodyClient struct{ base aws.HTTPClient }

func (c ownBodyClient) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		req.ContentLength = int64(len(b))
	}
	return c.base.Do(req)
}
