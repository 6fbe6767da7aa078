package capacity

import (
	"fmt"
	"math"
	"time"
)

// TTotalSumTolerance is how far the stage durations may sum from t_total_s, in seconds.
const TTotalSumTolerance = 0.05

// TTotal is the artifact of tts-bench ttotal: the time from asking for one more instance until it serves
// healthy traffic, as an ordered timeline of stages whose consecutive differences sum to TTotalS.
type TTotal struct {
	// SchemaVersion is SchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// Model is the catalog id of the model measured.
	Model string `json:"model"`
	// Endpoint is the endpoint measured.
	Endpoint string `json:"endpoint"`
	// InstanceType is the instance type measured.
	InstanceType string `json:"instance_type"`
	// Transport is how the first successful response was observed; it must equal the qmax artifact's.
	Transport string `json:"transport"`
	// QMaxSHA256 is the digest of the qmax artifact this measurement was made against.
	QMaxSHA256 string `json:"qmax_sha256"`
	// RunID identifies the run.
	RunID string `json:"run_id"`
	// FromInstances is the instance count before the scale-out.
	FromInstances int `json:"from_instances"`
	// ToInstances is the instance count asked for.
	ToInstances int `json:"to_instances"`
	// Timeline is the ordered list of stages, first to last.
	Timeline []Stage `json:"timeline"`
	// Durations are the differences of consecutive timeline entries; they sum to TTotalS.
	Durations []StageDuration `json:"durations"`
	// TTotalS is the time from the first to the last stage, in seconds.
	TTotalS float64 `json:"t_total_s"`
	// DominantStage is the To stage of the longest duration.
	DominantStage string `json:"dominant_stage"`
	// MissingStages lists expected stages that were not observed (empty when complete).
	MissingStages []string `json:"missing_stages"`
	// DryRun is true when the run changed nothing and its numbers must not drive a deployment.
	DryRun bool `json:"dry_run"`
}

// Stage is one point on the T_total timeline.
type Stage struct {
	// Stage names the stage, e.g. desired_count_set, container_started, first_success.
	Stage string `json:"stage"`
	// At is when the stage was reached, UTC.
	At time.Time `json:"at"`
	// Source says who observed it: container (a STAGE line), control-plane or client.
	Source string `json:"source"`
}

// StageDuration is the time between two consecutive stages.
type StageDuration struct {
	// From is the earlier stage.
	From string `json:"from"`
	// To is the later stage; the duration is attributed to reaching it.
	To string `json:"to"`
	// DurationS is To's time minus From's time, in seconds.
	DurationS float64 `json:"duration_s"`
}

// LoadTTotal reads and strictly decodes a ttotal artifact. It does not Verify it.
func LoadTTotal(path string) (*TTotal, error) {
	v, _, err := load[TTotal](path)
	return v, err
}

// ParseTTotal strictly decodes a ttotal artifact; source names it in errors.
func ParseTTotal(source string, data []byte) (*TTotal, error) { return parse[TTotal](source, data) }

// Verify returns every semantic problem of the artifact. It is invalid when times go backwards or the
// durations do not sum to t_total_s within TTotalSumTolerance.
func (t *TTotal) Verify() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if t.SchemaVersion != SchemaVersion {
		add("schema_version: is %d, this tts-bench reads %d: re-run tts-bench ttotal with this version", t.SchemaVersion, SchemaVersion)
	}
	errs = append(errs, emptyFields([]field{
		{"model", t.Model}, {"endpoint", t.Endpoint}, {"instance_type", t.InstanceType}, {"run_id", t.RunID},
	})...)
	if !knownTransport(t.Transport) {
		add("transport: unknown transport %q: want one of %v", t.Transport, Transports)
	}
	if !ValidDigest(t.QMaxSHA256) {
		add("qmax_sha256: %q is not a digest: want sha256:<64 hex digits>", t.QMaxSHA256)
	}
	if t.FromInstances < 1 || t.FromInstances >= MaxInstances {
		add("from_instances: is %d: want 1 to %d", t.FromInstances, MaxInstances-1)
	}
	if t.ToInstances <= t.FromInstances || t.ToInstances > MaxInstances {
		add("to_instances: is %d: want above from_instances %d, at most %d", t.ToInstances, t.FromInstances, MaxInstances)
	}
	if !positiveUpTo(t.TTotalS, MaxTTotalS) {
		add("t_total_s: is %g: want a number of seconds in (0, %d]", t.TTotalS, MaxTTotalS)
	}
	if len(t.Timeline) < 2 {
		add("timeline: has %d stages: at least the request and the first success are needed", len(t.Timeline))
		return errs
	}
	if len(t.Timeline) > MaxStages {
		add("timeline: has %d stages: at most %d", len(t.Timeline), MaxStages)
		return errs
	}
	for i, s := range t.Timeline {
		if s.Stage == "" {
			add("timeline[%d].stage: is empty", i)
		}
		if s.Source == "" {
			add("timeline[%d].source: is empty: say who observed the stage", i)
		}
		if s.At.IsZero() {
			add("timeline[%d].at: is not set", i)
		} else if _, off := s.At.Zone(); off != 0 {
			add("timeline[%d].at: %s is not UTC", i, s.At.Format(time.RFC3339Nano))
		}
		if i > 0 && s.At.Before(t.Timeline[i-1].At) {
			add("timeline[%d].at: %s goes backwards from %s (%s): stages must be in time order", i,
				s.At.Format(time.RFC3339Nano), t.Timeline[i-1].Stage, t.Timeline[i-1].At.Format(time.RFC3339Nano))
		}
	}
	if len(t.Durations) != len(t.Timeline)-1 {
		add("durations: has %d entries, want %d (one per consecutive pair of stages)", len(t.Durations), len(t.Timeline)-1)
		return errs
	}
	sum, longest := 0.0, -1.0
	dominant := ""
	for i, d := range t.Durations {
		from, to := t.Timeline[i], t.Timeline[i+1]
		if d.From != from.Stage || d.To != to.Stage {
			add("durations[%d]: is %s→%s, want %s→%s", i, d.From, d.To, from.Stage, to.Stage)
		}
		want := to.At.Sub(from.At).Seconds()
		if math.Abs(d.DurationS-want) > 0.001 || math.IsNaN(d.DurationS) {
			add("durations[%d].duration_s: is %g, but the timeline gives %.3f", i, d.DurationS, want)
		}
		sum += d.DurationS
		if d.DurationS > longest {
			longest, dominant = d.DurationS, d.To
		}
	}
	if math.Abs(sum-t.TTotalS) > TTotalSumTolerance || math.IsNaN(sum) {
		add("t_total_s: is %g but the durations sum to %.3f: the stages must account for all of T_total", t.TTotalS, sum)
	}
	if t.DominantStage != dominant {
		add("dominant_stage: is %q but the longest duration leads to %q", t.DominantStage, dominant)
	}
	return errs
}
