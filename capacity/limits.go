package capacity

// Bounds of every number a plan is built from: flags and what-if keys of tts-bench plan, the fields of the
// qmax and ttotal artifacts, and the plan's inputs. Each is far beyond any real deployment of a TTS model and
// close enough that the arithmetic stays exact and the printed table stays readable; error messages state
// them as intervals ("want a request rate in (0, 1e9]").
const (
	// MaxConcurrency bounds Q_max, staircase concurrencies and the throughput curve's concurrencies.
	MaxConcurrency = 100_000
	// MaxInstanceRPS bounds one instance's throughput, requests per second.
	MaxInstanceRPS = 1e6
	// MaxRPS bounds the peak and trough load of the fleet, requests per second.
	MaxRPS = 1e9
	// MaxTTotalS bounds T_total, in seconds (a day).
	MaxTTotalS = 86_400
	// MaxDetectionBufferS bounds the detection buffer, in seconds.
	MaxDetectionBufferS = 3600
	// MinCloudWatchRatio and MaxCloudWatchRatio bound the CloudWatch ÷ client concurrency ratio a plan uses:
	// outside them the metric does not measure what the client sent, and a target derived from it is noise.
	MinCloudWatchRatio, MaxCloudWatchRatio = 0.1, 10.0
	// MaxInstances bounds the fleet.
	MaxInstances = 100_000
	// MaxQueueDepth bounds the queue shield depth.
	MaxQueueDepth = 100_000
	// MaxInvocationTimeoutS is SageMaker's largest invocation timeout (streaming responses), in seconds.
	MaxInvocationTimeoutS = 3600
	// MaxLatencyMs bounds every latency an artifact records, in milliseconds (a day).
	MaxLatencyMs = 86_400_000
	// MaxCount bounds the request counts of one staircase step.
	MaxCount = 1_000_000_000
	// MaxQMaxSteps bounds the staircase of a qmax artifact (and so the throughput curve of a plan).
	MaxQMaxSteps = 256
	// MaxStages bounds the timeline of a ttotal artifact.
	MaxStages = 256
)

// inRange reports whether lo ≤ x ≤ hi; NaN is never in range.
func inRange(x, lo, hi float64) bool { return x >= lo && x <= hi }

// positiveUpTo reports whether 0 < x ≤ hi; NaN is never.
func positiveUpTo(x, hi float64) bool { return x > 0 && x <= hi }
