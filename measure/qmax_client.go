package measure

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/speech-infra/speech-infra/bench"
)

// The client watches itself: per step, the measuring process's CPU time (rusage, user +
// system) as a share of one core over the step, and its scheduling lag: a probe goroutine asks to wake every
// lagProbeInterval and records how late it woke. A client that used more than --max-client-cpu of a core or
// whose p99 lag exceeded --max-client-lag measured itself, not the instance: the step is unusable and says
// why. Little's law is checked on every step: achieved rate × mean response time against the time-averaged
// requests in flight, within capacity.LittlesLawTolerance; a step that misses it is flagged.

// Defaults of the client's own bounds.
const (
	// DefaultMaxClientCPU is the share of one core the measuring process may use during a step.
	DefaultMaxClientCPU = 0.8
	// DefaultMaxClientLag is the least bound on the p99 of the probe's wake-up lag during a step; the default
	// is a twentieth of the SLO when that is more (a client's lag adds to the TTFAB it measures).
	DefaultMaxClientLag = 50 * time.Millisecond
	// lagProbeInterval is how often the probe asks to wake.
	lagProbeInterval = 10 * time.Millisecond
)

// clientUse is what the process used during one step.
type clientUse struct {
	// CPUCores is CPU time ÷ wall time: 1 is one core busy for the whole step.
	CPUCores float64
	// LagP99Ms and LagMaxMs are the probe's wake-up lag.
	LagP99Ms, LagMaxMs float64
}

// clientWatch measures clientUse from watchClient to Stop.
type clientWatch struct {
	start time.Time
	cpu0  time.Duration
	mu    sync.Mutex
	lags  []float64
	stop  chan struct{}
	done  chan struct{}
}

// watchClient starts watching the process: its CPU time from now, and the lag probe.
func watchClient() *clientWatch {
	w := &clientWatch{start: time.Now(), cpu0: processCPU(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTimer(lagProbeInterval)
		defer t.Stop()
		asked := time.Now()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				lag := time.Since(asked) - lagProbeInterval
				w.mu.Lock()
				w.lags = append(w.lags, float64(max(lag, 0))/float64(time.Millisecond))
				w.mu.Unlock()
				asked = time.Now()
				t.Reset(lagProbeInterval)
			}
		}
	}()
	return w
}

// Stop ends the watch and returns the use.
func (w *clientWatch) Stop() clientUse {
	close(w.stop)
	<-w.done
	var u clientUse
	if wall := time.Since(w.start); wall > 0 {
		u.CPUCores = float64(processCPU()-w.cpu0) / float64(wall)
	}
	w.mu.Lock()
	lags := append([]float64(nil), w.lags...)
	w.mu.Unlock()
	sort.Float64s(lags)
	if len(lags) > 0 {
		u.LagP99Ms, u.LagMaxMs = bench.Percentile(lags, 99), lags[len(lags)-1]
	}
	return u
}

// judgeClient says why a step is unusable when the client was its bottleneck ("" when it was not).
func (o *QMax) judgeClient(u clientUse) string {
	var why []string
	if o.MaxClientCPU > 0 && u.CPUCores > o.MaxClientCPU {
		why = append(why, fmt.Sprintf("client-bound: the measuring process used %.2f of a core, above --max-client-cpu %.2f: run the client on a less loaded or larger machine", u.CPUCores, o.MaxClientCPU))
	}
	if o.MaxClientLag > 0 && u.LagP99Ms > float64(o.MaxClientLag)/float64(time.Millisecond) {
		why = append(why, fmt.Sprintf("client-bound: the measuring process's scheduling lag was %.1f ms p99 (%.1f ms max), above --max-client-lag %s: run the client on a less loaded machine", u.LagP99Ms, u.LagMaxMs, o.MaxClientLag))
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, "; ")
}
