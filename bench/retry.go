package bench

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
)

// RetryPolicyNone is the retry policy every measuring client of the load engine uses, as artifacts record it
// (retry_policy): one attempt per request. A retry inside the TTFAB clock would turn a throttled or failed answer
// into a slower success; with none, it is an error record of its own.
//
//   - sagemaker-stream: the SDK's retryer is off (NoRetry: aws.NopRetryer, RetryMaxAttempts 1), so a
//     ThrottlingException, a ServiceUnavailable or any 5xx from SageMaker is returned at once;
//   - http: net/http never retries a POST (not idempotent) and NewHTTP adds no retry.
const RetryPolicyNone = "none"

// NoRetry turns the SDK's retryer off for a measuring client: sagemakerruntime.NewFromConfig(cfg, NoRetry).
func NoRetry(o *sagemakerruntime.Options) {
	o.Retryer = aws.NopRetryer{}
	o.RetryMaxAttempts = 1
}
