package measure

import (
	"io"
	"strings"
	"sync"
	"time"

	"github.com/speech-infra/speech-infra/cloud"
)

// InstanceSample is one DescribeEndpoint reading during a replay.
type InstanceSample struct {
	// At is when it was read; Current and Desired the variant's CurrentInstanceCount and DesiredInstanceCount.
	At      time.Time `json:"at"`
	Current int       `json:"current"`
	Desired int       `json:"desired"`
}

// InstanceLog is the instance samples of one replay, written beside its records, with the poller's back-offs
// under throttling (a throttled DescribeEndpoint leaves a gap in the samples as long as its back-off).
type InstanceLog struct {
	RunID    string               `json:"run_id"`
	Trace    string               `json:"trace"`
	Endpoint string               `json:"endpoint"`
	Samples  []InstanceSample     `json:"samples"`
	Backoffs []cloud.BackoffEvent `json:"backoffs,omitempty"`
}

// InstancesPath is where the instance samples of a records file live.
func InstancesPath(records string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(records, ".gz"), ".jsonl")
	return base + ".instances.json"
}

// LockedWriter serializes writes from several goroutines to one writer.
type LockedWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}
