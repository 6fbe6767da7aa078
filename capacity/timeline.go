package capacity

import (
	"fmt"
	"sort"
	"time"
)

// The stages of a T_total timeline (docs/design.md, "T_total"), besides the VariantStatus values
// DescribeEndpoint shows while the endpoint updates (Updating, ActivatingTraffic, ...), which are stages
// under AWS's own names.
const (
	// StageLoadApplied: the probe load runs (before the clock starts; context only).
	StageLoadApplied = "load_applied"
	// StageDesiredSet: UpdateEndpointWeightsAndCapacities raised the desired count; the clock starts.
	StageDesiredSet = "desired_set"
	// StageInstanceLogging: the first event of the new instance's log stream.
	StageInstanceLogging = "instance_logging"
	// The container's own STAGE lines (container/README.md).
	StageContainerStarted = "container_started"
	StageWeightsVerified  = "weights_verified"
	StageEngineLoaded     = "engine_loaded"
	StageWarmupDone       = "warmup_done"
	StageReady            = "ready"
	// StageInService: DescribeEndpoint says InService with the raised instance count.
	StageInService = "in_service"
	// StageFirstServedByNewInstance: the first probe response that names (X-Amzn-SageMaker-Custom-Attributes:
	// instance-id=…) an instance no response named before the scale-out. It is not causally ordered against
	// in_service (SageMaker may route to the instance before DescribeEndpoint says InService), so the two
	// are ordered by their times.
	StageFirstServedByNewInstance = "first_served_by_new_instance"
	// StageTrafficRecovered: once the new instance has served, the probe's sliding-window p95 TTFAB is back
	// within the recovery threshold (TTotalProbe.RecoveryThresholdMs).
	StageTrafficRecovered = "traffic_recovered"
)

// ExpectedStages are the stages a complete ttotal timeline has, in causal order. The VariantStatus stages
// are not among them: a poll may miss a short status, and AWS decides which it shows.
var ExpectedStages = []string{
	StageLoadApplied, StageDesiredSet, StageInstanceLogging, StageContainerStarted, StageWeightsVerified,
	StageEngineLoaded, StageWarmupDone, StageReady, StageInService, StageFirstServedByNewInstance, StageTrafficRecovered,
}

// ContainerStages are the STAGE lines the container prints, in order.
var ContainerStages = []string{StageContainerStarted, StageWeightsVerified, StageEngineLoaded, StageWarmupDone, StageReady}

// Sources of a stage time.
const (
	// SourceClient is the measuring process's clock (monotonic, anchored to wall time once).
	SourceClient = "client"
	// SourceContainer is the time a container STAGE line carries (the instance's wall clock).
	SourceContainer = "container"
	// SourceLog is a CloudWatch Logs event's timestamp.
	SourceLog = "log"
)

// Flags a timeline assembly sets on a stage.
const (
	// FlagClamped: the stage's observed time was before its predecessor's, so it was moved up to it.
	FlagClamped = "clamped"
	// FlagDuplicate: the stage was seen more than once; the first sighting is kept.
	FlagDuplicate = "duplicate"
)

// Event is one observation of a stage, before assembly.
type Event struct {
	// Stage names the stage; At is when it was observed; Source who observed it.
	Stage  string
	At     time.Time
	Source string
}

// stageRank places a stage in the causal order: what must precede what, whatever the clocks say. A
// VariantStatus comes where AWS shows it: Creating and Updating right after the count is raised,
// ActivatingTraffic (and any other status) after the container is ready. first_served_by_new_instance
// shares in_service's rank.
func stageRank(name string) float64 {
	if name == StageFirstServedByNewInstance {
		name = StageInService // the same rank: ordered against in_service by time
	}
	for i, s := range ExpectedStages {
		if s == name {
			return float64(i)
		}
	}
	switch name {
	case "Creating", "Updating":
		return 1.5 // after desired_set, before the instance logs
	default:
		return 7.5 // after ready, before in_service
	}
}

// AssembleTimeline orders observations into a timeline:
//
//   - a stage seen more than once keeps its first (earliest) sighting, flagged FlagDuplicate with the count;
//   - stages are put in causal order (ExpectedStages, with VariantStatus values where AWS shows them), and
//     among stages of the same rank by time;
//   - a stage whose time is earlier than its predecessor's (clocks of different machines, a poll that saw a
//     status late) is clamped to its predecessor's time and flagged FlagClamped with the observed time.
//
// Times are made UTC. The result's times never go backwards, so consecutive differences are never negative
// and sum to the span of the timeline.
func AssembleTimeline(events []Event) []Stage {
	type seen struct {
		ev    Event
		count int
	}
	byName := map[string]*seen{}
	var order []string
	for _, e := range events {
		if s, ok := byName[e.Stage]; ok {
			s.count++
			if e.At.Before(s.ev.At) {
				s.ev = e
			}
			continue
		}
		byName[e.Stage] = &seen{ev: e, count: 1}
		order = append(order, e.Stage)
	}
	list := make([]*seen, 0, len(order))
	for _, n := range order {
		list = append(list, byName[n])
	}
	sort.SliceStable(list, func(i, j int) bool {
		ri, rj := stageRank(list[i].ev.Stage), stageRank(list[j].ev.Stage)
		if ri != rj {
			return ri < rj
		}
		return list[i].ev.At.Before(list[j].ev.At)
	})
	out := make([]Stage, 0, len(list))
	for i, s := range list {
		st := Stage{Stage: s.ev.Stage, At: s.ev.At.Round(0).UTC(), Source: s.ev.Source}
		if s.count > 1 {
			st.Flags = append(st.Flags, fmt.Sprintf("%s: seen %d times, the first kept", FlagDuplicate, s.count))
		}
		if i > 0 && st.At.Before(out[i-1].At) {
			st.Flags = append(st.Flags, fmt.Sprintf("%s: observed at %s, %s before %s", FlagClamped,
				st.At.Format(time.RFC3339Nano), out[i-1].At.Sub(st.At), out[i-1].Stage))
			st.At = out[i-1].At
		}
		out = append(out, st)
	}
	return out
}

// MissingStages are the ExpectedStages the timeline lacks, in order (empty, not nil, when complete).
func MissingStages(timeline []Stage) []string {
	have := map[string]bool{}
	for _, s := range timeline {
		have[s.Stage] = true
	}
	missing := []string{}
	for _, s := range ExpectedStages {
		if !have[s] {
			missing = append(missing, s)
		}
	}
	return missing
}
