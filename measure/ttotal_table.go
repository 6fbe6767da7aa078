package measure

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
)

// renderTTotalTable prints the timeline for humans (stdout): each stage's time from the clock start, its
// duration and share of T_total, its source and flags, then the split and what is missing.
func renderTTotalTable(w io.Writer, t *capacity.TTotal) error {
	var b strings.Builder
	state := "complete"
	if len(t.MissingStages) > 0 {
		state = "PARTIAL"
	}
	fmt.Fprintf(&b, "T_total of %s on %s over %s: %s (%d → %d instances, %s)\n", t.Model, t.InstanceType, t.Transport, formatTTotal(t), t.FromInstances, t.ToInstances, state)
	var zero time.Time
	for _, s := range t.Timeline {
		if s.Stage == t.ClockStart {
			zero = s.At
		}
	}
	dur := map[string]float64{}
	for _, d := range t.Durations {
		dur[d.To] = d.DurationS
	}
	fmt.Fprintf(&b, "%-20s %10s %12s %7s  %-9s %s\n", "stage", "at (s)", "duration (s)", "share", "source", "flags")
	started := false
	for _, s := range t.Timeline {
		d, share := "-", "-"
		if started {
			d = fmt.Sprintf("%.3f", dur[s.Stage])
			if t.TTotalS > 0 {
				share = fmt.Sprintf("%.1f%%", 100*dur[s.Stage]/t.TTotalS)
			}
		}
		if s.Stage == t.ClockStart {
			started = true
		}
		fmt.Fprintf(&b, "%-20s %10.3f %12s %7s  %-9s %s\n", s.Stage, s.At.Sub(zero).Seconds(), d, share, s.Source, strings.Join(s.Flags, "; "))
	}
	fmt.Fprintf(&b, "dominant stage: %s; platform %.3f s (%.1f%%, before container_started), container %.3f s (%.1f%%)\n",
		t.DominantStage, t.PlatformS, 100*t.PlatformShare, t.ContainerS, 100*t.ContainerShare)
	if p := t.Probe; p != nil {
		fmt.Fprintf(&b, "probe: %d in flight (%s); p95 TTFAB %.1f ms before the scale-out (peak %.1f ms before in_service, SLO %d ms: %s); recovered at ≤ %.1f ms; last window %.1f ms over %d requests\n",
			p.Concurrency, p.ConcurrencyBasis, p.P95BeforeScaleOutMs, p.PeakP95BeforeInServiceMs, p.SLOTTFABMs,
			map[bool]string{true: "past it", false: "NEVER PAST IT: no recovery to measure"}[p.ExceededSLOBeforeInService], p.RecoveryThresholdMs, p.P95LastWindowMs, p.SamplesLastWindow)
		if p.NewInstance != "" {
			fmt.Fprintf(&b, "new instance: %s (before the scale-out: %s)\n", p.NewInstance, strings.Join(p.InstancesBeforeScaleOut, ", "))
		}
	}
	if pl := t.Polling; pl != nil && len(pl.Throttled) > 0 {
		total := 0.0
		for _, e := range pl.Throttled {
			total += e.WaitS
		}
		fmt.Fprintf(&b, "throttled: %d read(s), %.1f s of back-off in all\n", len(pl.Throttled), total)
	}
	if len(t.MissingStages) > 0 {
		fmt.Fprintf(&b, "missing stages: %s\n", strings.Join(t.MissingStages, ", "))
	}
	if t.IncompleteReason != "" {
		fmt.Fprintf(&b, "why: %s\n", t.IncompleteReason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatTTotal prints T_total with its uncertainty, to the precision the uncertainty allows: "283 s ± 2 s",
// "14.2 s ± 0.9 s"; without a recorded uncertainty, to a tenth of a second, saying so; ending on a stage no
// poll delays (a partial run's first_served_by_new_instance or a container line), to the hundredth.
func formatTTotal(t *capacity.TTotal) string {
	if t.TTotalUncertaintyS == nil {
		return fmt.Sprintf("%.1f s (uncertainty not recorded)", t.TTotalS)
	}
	u := *t.TTotalUncertaintyS
	switch {
	case u == 0:
		return fmt.Sprintf("%.2f s (it ends on %s, a time no poll delays)", t.TTotalS, t.Timeline[len(t.Timeline)-1].Stage)
	case u >= 1:
		return fmt.Sprintf("%.0f s ± %.0f s", t.TTotalS, math.Ceil(u))
	case u >= 0.1:
		return fmt.Sprintf("%.1f s ± %.1f s", t.TTotalS, math.Ceil(u*10)/10)
	default:
		return fmt.Sprintf("%.2f s ± %.2f s", t.TTotalS, math.Ceil(u*100)/100)
	}
}
