package simulate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/speech-infra/speech-infra/autoscale"
	"github.com/speech-infra/speech-infra/loadmodel"
)

// Version names the simulator's rules; a plan records it with the envelope results it computed, and a change
// to the rules that moves any result changes it.
const Version = "fleet-sim/6 (1-s fleet steps, 10-s alarm ticks, a period's datapoint the Maximum over the AWS period it stands for and evaluated one tick after it closes, loadmodel steady states with a queue that fills and drains above capacity, each second's requests over the SLO read off its TTFAB distribution, autoscale.Decide, cooldown from completion)"

// Tick is the autoscaler's clock on AWS: the period of the high-resolution ConcurrentRequestsPerModel metric.
// Alarms are evaluated and autoscale.Decide is called once per tick; the fleet advances in 1-s steps. A
// Scaling with a PeriodS of its own (a plan measured on a compressed emulator: docs/design.md, "Compressed
// CloudWatch time") ticks at that period instead.
const Tick = autoscale.MetricPeriod

// EvaluationLag is how long after a period closes its datapoint is evaluated: the worst case, one Tick (one
// PeriodS for a Scaling that sets it).
// CloudWatch evaluates a high-resolution alarm every 10 seconds, at a phase of its own, not on the period's
// boundary; the emulator likewise evaluates on its own 10-s ticker, 0 to 10 s after the period closes
// (emulator/autoscaling.go, scaleLoop). Measured against the emulator, a simulator that evaluates on the
// boundary scales out 15-27 s before the replay does: a plan whose detection buffer only covers the three
// datapoints looks safe here and is late there. Taking the whole tick keeps the simulator on the late side.
const EvaluationLag = Tick

// substep is the step of the fleet model.
const substep = time.Second

// epoch is the wall-clock time a simulation starts at (the decision function needs times; only differences
// matter).
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Metrics a target tracking policy may track.
const (
	// MetricConcurrency is SageMakerVariantConcurrentRequestsPerModelHighResolution: the 10-s Maximum of
	// ConcurrentRequestsPerModel, three breaching datapoints to scale out.
	MetricConcurrency = "concurrency"
	// MetricInvocations is SageMakerVariantInvocationsPerInstance: invocations per instance per minute (Sum),
	// three breaching 1-min datapoints to scale out.
	MetricInvocations = "invocations"
)

// Scaling is the scaling a fleet runs: a target tracking policy and, optionally, a step scale-in policy with
// its alarm (what capacity.ScalingSpecFor renders for a plan).
type Scaling struct {
	// MinInstances and MaxInstances bound the fleet.
	MinInstances, MaxInstances int
	// Metric is what target tracking tracks: MetricConcurrency or MetricInvocations.
	Metric string
	// TargetValue is the target tracking target, in the metric's units.
	TargetValue float64
	// ScaleOutCooldownS and ScaleInCooldownS are the target tracking policy's cooldowns.
	ScaleOutCooldownS, ScaleInCooldownS int
	// TargetScaleIn enables target tracking's own scale-in (its low alarm: 15 one-minute datapoints below 90%
	// of the target); the plan disables it and scales in with StepScaleIn.
	TargetScaleIn bool
	// StepScaleIn is the step scale-in policy; nil when there is none.
	StepScaleIn *StepScaleIn
	// PeriodS is the high-resolution metric's period, the alarms' tick, in whole seconds: 0 means Tick (AWS's
	// 10 s). A plan measured on an emulator that compresses CloudWatch time sets its own (capacity.Inputs
	// .MetricPeriodS); every other CloudWatch duration here (the invocations metric's minute, the low alarm's
	// datapoints, the default cooldown) is compressed with it.
	PeriodS int
}

// tick is the alarms' tick of s (Scaling.PeriodS).
func (s *Scaling) tick() time.Duration {
	if s == nil || s.PeriodS <= 0 {
		return Tick
	}
	return time.Duration(s.PeriodS) * time.Second
}

// compression is how many times shorter than AWS's the tick of s is (at least 1).
func (s *Scaling) compression() int { return max(1, int(Tick/s.tick())) }

// StepScaleIn removes Adjustment instances when per-instance concurrency (Maximum) stays below Threshold for
// EvaluationPeriods periods of PeriodS.
type StepScaleIn struct {
	Threshold                  float64
	PeriodS, EvaluationPeriods int
	CooldownS                  int
	Adjustment                 int
}

// Fleet is one configuration to simulate.
type Fleet struct {
	// Name says what the configuration is ("plan (s 1.25)", "fixed fleet of 12", ...).
	Name string
	// Instance is the model of one instance under load (package loadmodel).
	Instance loadmodel.Model
	// TTotalS is the delay from asking for one more instance until it serves (ttotal's t_total_s).
	TTotalS float64
	// Scaling is the fleet's scaling; nil for a fixed fleet.
	Scaling *Scaling
	// Fixed is the size of a fixed fleet (Scaling nil).
	Fixed int
	// InitialInstances is the fleet the trace starts on; 0 starts where target tracking would have left the
	// first rate (the smallest fleet at or below the target), within the bounds.
	InitialInstances int
	// FlapWindowS is T_plan: a scale-in followed by a scale-out within it is a flap. 0 means TTotalS.
	FlapWindowS float64
	// Bucket is the length of a result row; 0 means a minute.
	Bucket time.Duration
	// PricePerHour is the price of one instance-hour, in US dollars.
	PricePerHour float64
	// Scatter, when set, makes the run one random run of the real alarm, for the spread of scale-out times
	// (ScaleOutSpread), with a random stream seeded by Seed. A plan's verdict never uses it. Three things are
	// drawn where the deterministic run takes a fixed, late value:
	//   - each 10-s datapoint, from the rate's scatter (loadmodel.Scatter.Draw), instead of the model's metric;
	//   - the trace's phase on the 10-s period grid: the first period is 1 to 10 s long (10 in the deterministic
	//     run), as a replay starts at any moment of the wall clock's grid; a partial period's datapoint is the
	//     Maximum of fewer samples (partialDeviate);
	//   - the evaluation lag, 0 to 9 s after a period closes (EvaluationLag, 10 s, in the deterministic run), as
	//     the emulator's evaluation ticker has a phase of its own.
	Scatter *loadmodel.Scatter
	// Seed seeds the datapoints' random stream when Scatter is set.
	Seed uint64

	// stop, set by RunContext, ends the run early when it returns true (checked every CheckEvery).
	stop Cancel
}

// Minute is one row of a simulation: a minute, or a Bucket.
type Minute struct {
	// Minute counts rows from 0.
	Minute int `json:"minute"`
	// OfferedRPS is the mean offered rate.
	OfferedRPS float64 `json:"offered_rps"`
	// Serving and Starting are the instance counts at the end of the row.
	Serving  int `json:"serving"`
	Starting int `json:"starting"`
	// StartingWhileViolating is the most instances starting in a second of the row that missed the SLO by
	// itself, more of its requests violating than the percentile allows (0 when none did): the worst row's reason is told from it, not from the row's end.
	StartingWhileViolating int `json:"starting_while_violating"`
	// LoadPerInstanceRPS is the mean offered rate per serving instance.
	LoadPerInstanceRPS float64 `json:"load_per_instance_rps"`
	// Metric is the highest scaling-metric value (per-instance concurrency as the alarm sees it) in the row.
	Metric float64 `json:"metric"`
	// Concurrency is the highest time-averaged per-instance in-flight count in the row.
	Concurrency float64 `json:"concurrency"`
	// TTFABMs is the highest TTFAB (at the SLO's percentile) in the row.
	TTFABMs float64 `json:"ttfab_ms"`
	// Offered and Shed count the row's requests and those shed with 503.
	Offered float64 `json:"offered"`
	Shed    float64 `json:"shed"`
	// ShedRPS is Shed per second.
	ShedRPS float64 `json:"shed_rps"`
	// Violating counts the requests that did not meet the SLO: in each second, its requests times the share of
	// its state's that violate (loadmodel.SLO.ViolatingShare: the shed ones and those over the TTFAB bound,
	// read off the state's TTFAB distribution; all of them when the stall is over its bound).
	Violating float64 `json:"violating"`
	// Violates is true when more requests violated than the percentile allows.
	Violates bool `json:"violates"`
}

// Event is one scaling decision that changed the desired capacity.
type Event struct {
	// AtS is the time since the start of the trace, in seconds.
	AtS  float64 `json:"at_s"`
	From int     `json:"from"`
	To   int     `json:"to"`
	// ServingAtS is when the added instances serve (T_total after the decision); 0 for a scale-in.
	ServingAtS float64 `json:"serving_at_s,omitempty"`
	// Policy and Reason are autoscale.Decide's.
	Policy string `json:"policy"`
	Reason string `json:"reason"`
}

// Flap is a scale-in followed by a scale-out within the flap window.
type Flap struct {
	ScaleInAtS  float64 `json:"scale_in_at_s"`
	ScaleOutAtS float64 `json:"scale_out_at_s"`
}

// Worst is the worst row and why.
type Worst struct {
	Minute int    `json:"minute"`
	Why    string `json:"why"`
}

// Result is the simulation of one fleet configuration on one trace.
type Result struct {
	// Name is the Fleet's.
	Name string `json:"name"`
	// BucketS is the length of a row in seconds (60 for minutes).
	BucketS float64 `json:"bucket_s"`
	// MinInstances and MaxInstances bound the fleet (equal for a fixed fleet).
	MinInstances int `json:"min_instances"`
	MaxInstances int `json:"max_instances"`
	// Minutes are the rows.
	Minutes []Minute `json:"minutes,omitempty"`
	// Events are the scaling decisions that changed capacity.
	Events []Event `json:"events,omitempty"`
	// ScaleOuts and ScaleIns count the events of each kind.
	ScaleOuts int `json:"scale_outs"`
	ScaleIns  int `json:"scale_ins"`
	// Flaps are the scale-ins followed by a scale-out within the flap window.
	Flaps []Flap `json:"flaps,omitempty"`
	// ViolationMinutes counts the rows that violate the SLO.
	ViolationMinutes int `json:"violation_minutes"`
	// Offered and Shed count requests over the whole trace.
	Offered float64 `json:"offered"`
	Shed    float64 `json:"shed"`
	// PeakInstances is the most instances (serving and starting) at once.
	PeakInstances int `json:"peak_instances"`
	// InstanceHours counts serving and starting instances (both are billed); Cost is their price.
	InstanceHours float64 `json:"instance_hours"`
	Cost          float64 `json:"cost_usd"`
	// Worst is the worst row; nil for an empty trace.
	Worst *Worst `json:"worst,omitempty"`
}

// MeetsSLO reports whether no row violated the SLO.
func (r Result) MeetsSLO() bool { return r.ViolationMinutes == 0 }

// Holds reports whether the fleet held: no violating row and no flap.
func (r Result) Holds() bool { return r.ViolationMinutes == 0 && len(r.Flaps) == 0 }

// alarm is a CloudWatch alarm evaluated on the simulated metric.
type alarm struct {
	name        string
	period      int // in ticks
	evals       int
	toAlarm     int
	threshold   float64
	greater     bool
	stat        string // Maximum, Average or Sum
	points      []float64
	inAlarm     bool
	acc         float64
	accN        int
	policyIndex int
	invocations bool // fed InvocationsPerInstance instead of concurrency
}

// add feeds one tick's value; at the end of each period the alarm evaluates.
func (a *alarm) add(v float64) {
	switch {
	case a.stat == "Maximum":
		if a.accN == 0 || v > a.acc {
			a.acc = v
		}
	default:
		a.acc += v
	}
	a.accN++
	if a.accN < a.period {
		return
	}
	dp := a.acc
	if a.stat == "Average" {
		dp /= float64(a.accN)
	}
	a.acc, a.accN = 0, 0
	a.points = append(a.points, dp)
	if len(a.points) > a.evals {
		a.points = a.points[len(a.points)-a.evals:]
	}
	breaching := 0
	for _, p := range a.points {
		if a.greater && p > a.threshold || !a.greater && p < a.threshold {
			breaching++
		}
	}
	a.inAlarm = len(a.points) >= a.evals && breaching >= a.toAlarm
}

// policies turns a Scaling into autoscale.Decide's policies and the alarms that invoke them, as Application
// Auto Scaling creates them: the target tracking policy's high alarm (3 datapoints above the target: 10-s
// Maximum for the high-resolution concurrency metric, 1-min Sum for invocations), its low alarm when scale-in
// is enabled (15 one-minute datapoints below 90% of the target), and the step scale-in policy's alarm.
func policies(s *Scaling) ([]autoscale.Policy, []*alarm) {
	inCool := time.Duration(s.ScaleInCooldownS) * time.Second
	if s.ScaleInCooldownS == 0 {
		inCool = autoscale.Compress(autoscale.DefaultCooldown, s.compression())
	}
	pols := []autoscale.Policy{{Name: "target-tracking", TargetTracking: &autoscale.TargetTracking{
		TargetValue:      s.TargetValue,
		ScaleOutCooldown: time.Duration(s.ScaleOutCooldownS) * time.Second,
		ScaleInCooldown:  inCool, DisableScaleIn: !s.TargetScaleIn}}}
	inv := s.Metric == MetricInvocations
	high := &alarm{name: "target-tracking-AlarmHigh", period: 1, evals: 3, toAlarm: 3, threshold: s.TargetValue, greater: true, stat: "Maximum", invocations: inv}
	if inv {
		high.period, high.stat = 6, "Sum"
	}
	alarms := []*alarm{high}
	if s.TargetScaleIn {
		low := *high
		low.name, low.period, low.evals, low.toAlarm, low.threshold, low.greater = "target-tracking-AlarmLow", 6, 15, 15, 0.9*s.TargetValue, false
		if !inv {
			low.stat = "Maximum"
		}
		alarms = append(alarms, &low)
	}
	if st := s.StepScaleIn; st != nil {
		pols = append(pols, autoscale.Policy{Name: "step-scale-in", Step: &autoscale.StepScaling{
			AdjustmentType: autoscale.ChangeInCapacity, Aggregation: autoscale.AggregateMaximum,
			Cooldown: time.Duration(st.CooldownS) * time.Second,
			Steps:    []autoscale.StepAdjustment{{Upper: ptr(0.0), Adjustment: st.Adjustment}}}})
		period := max(1, int(math.Round(float64(st.PeriodS)/s.tick().Seconds())))
		alarms = append(alarms, &alarm{name: "step-scale-in-alarm", period: period, evals: st.EvaluationPeriods, toAlarm: st.EvaluationPeriods,
			threshold: st.Threshold, stat: "Maximum", policyIndex: 1})
	}
	return pols, alarms
}

func ptr[T any](v T) *T { return &v }

// cursor walks a trace forward in time, so that a run reads each point once: linear in the trace's length.
type cursor struct {
	tr Trace
	i  int
}

// requests is the number of requests offered in [from, to); calls must not go back in time.
func (c *cursor) requests(from, to time.Duration) float64 {
	from, to = max(from, 0), min(to, c.tr.Duration)
	total := 0.0
	for from < to && c.i < len(c.tr.Points) {
		end := c.tr.Duration
		if c.i+1 < len(c.tr.Points) {
			end = c.tr.Points[c.i+1].At
		}
		if end <= from {
			c.i++
			continue
		}
		hi := min(end, to)
		total += c.tr.Points[c.i].RPS * (hi - from).Seconds()
		from = hi
	}
	return total
}

// Cancel, when it returns true, stops a run early (checked as often as RunContext checks its context).
type Cancel func() bool

// CheckEvery is how often a run checks whether it should stop (its context, or its Cancel): every simulated
// minute of 1-s steps, a few microseconds of work, so a run stops at once however long its trace.
const CheckEvery = time.Minute

// Run simulates fleet f on trace tr, deterministically. Every second the offered requests arrive, spread
// evenly over the serving instances (least outstanding requests), and each instance is at the steady state
// the instance model gives for its share; every Tick the alarms take their datapoints and autoscale.Decide
// decides; an added instance serves T_total after the decision, and the scale-out activity completes then
// (its cooldown starts: autoscale.PolicyState.Completed). While instances are starting the endpoint is
// Updating and Application Auto Scaling waits, as it does on SageMaker (and in the emulator). A scale-in
// removes instances at once.
func Run(tr Trace, f Fleet) Result {
	r, _ := run(tr, f, f.stop)
	return r
}

// RunContext is Run that stops when ctx is done, checking it every CheckEvery of simulated time: it returns
// context.Cause(ctx) then, and no result.
func RunContext(ctx context.Context, tr Trace, f Fleet) (Result, error) {
	stopped := false
	f.stop = func() bool {
		stopped = ctx.Err() != nil
		return stopped
	}
	r := Run(tr, f)
	if stopped {
		return Result{}, context.Cause(ctx)
	}
	return r, nil
}

// stopOn is the stop check of a run under ctx.
func stopOn(ctx context.Context) Cancel { return func() bool { return ctx.Err() != nil } }

// checkSteps is CheckEvery in 1-s steps.
const checkSteps = int(CheckEvery / substep)

// run is Run that stops when stop (nil: never) returns true; ok is false then.
func run(tr Trace, f Fleet, stop Cancel) (Result, bool) {
	inst := f.Instance
	bucket := f.Bucket
	if bucket <= 0 {
		bucket = time.Minute
	}
	res := Result{Name: f.Name, BucketS: bucket.Seconds()}
	var pols []autoscale.Policy
	var alarms []*alarm
	lo, hi := f.Fixed, f.Fixed
	if f.Scaling != nil {
		pols, alarms = policies(f.Scaling)
		lo, hi = f.Scaling.MinInstances, f.Scaling.MaxInstances
	}
	res.MinInstances, res.MaxInstances = lo, hi
	serving := hi
	if f.Scaling != nil {
		serving = f.InitialInstances
		if serving == 0 {
			serving = initialFleet(inst, f.Scaling, tr.RateAt(0))
		}
		serving = min(hi, max(lo, serving))
	}
	flapWindow := f.FlapWindowS
	if flapWindow <= 0 {
		flapWindow = f.TTotalS
	}
	tTotal := time.Duration(f.TTotalS * float64(time.Second))
	var starting []time.Duration // ready times, in order
	slo := inst.SLO
	cur := Minute{}
	instSeconds := 0.0
	tickInvocations := 0.0
	var rng *rand.Rand
	// The first period's length and the evaluation lag: the latest phases, unless this is a scattered run.
	tick := f.Scaling.tick()
	firstPeriod, lag := tick, tick
	// recent holds the states of the last seconds a ConcurrentRequestsPerModel datapoint spans: one tick on AWS,
	// and on a plan that compresses CloudWatch time the AWS period the tick stands for (Tick), as the emulator
	// takes a compressed period's Maximum over the wall-clock window of the period it compresses
	// (emulator/cloudwatch_alarms.go, trailingPoints). After a scale-out that window still holds the seconds
	// before the new instance served.
	recent := make([]loadmodel.Point, 0, int(tick*time.Duration(f.Scaling.compression())/substep))
	if f.Scatter != nil {
		rng = rand.New(rand.NewPCG(f.Seed, 0x5ca77e2))
		firstPeriod = time.Duration(1+rng.IntN(int(tick/substep))) * substep
		lag = time.Duration(rng.IntN(int(tick/substep))) * substep
	}
	// The datapoints of the periods that closed, each fed to the alarms lag after its close (at most two wait:
	// lag ≤ tick).
	type datapoint struct {
		evalAt              time.Duration
		metric, invocations float64
	}
	var closed []datapoint
	lastScaleIn := math.Inf(-1)
	// backlog is each serving instance's queue beyond its steady state (loadmodel.Model.Advance): above the
	// capacity the shield fills over time, and drains when the load falls or a new instance serves.
	backlog := 0.0
	flush := func(m int, length float64) {
		cur.Minute = m
		cur.OfferedRPS = cur.Offered / length
		cur.ShedRPS = cur.Shed / length
		cur.Serving, cur.Starting = serving, len(starting)
		if cur.Serving > 0 {
			cur.LoadPerInstanceRPS = cur.OfferedRPS / float64(cur.Serving)
		}
		cur.Violates = slo.RowViolates(cur.Offered, cur.Violating)
		if cur.Violates {
			res.ViolationMinutes++
		}
		res.Minutes = append(res.Minutes, cur)
		cur = Minute{}
	}
	c := &cursor{tr: tr}
	steps := int((tr.Duration + substep - 1) / substep)
	rowStart := time.Duration(0)
	for i := range steps {
		t := time.Duration(i) * substep
		if stop != nil && i%checkSteps == 0 && stop() {
			return res, false
		}
		for len(starting) > 0 && starting[0] <= t {
			// The instances share the queued requests evenly (the load balancer spreads what arrives).
			backlog *= float64(serving) / float64(serving+1)
			serving++
			starting = starting[1:]
			if len(starting) == 0 {
				// The scale-out activity completes when its instances serve: the cooldown starts now.
				for j := range pols {
					pols[j].State.Completed(true, epoch.Add(t))
				}
			}
		}
		arrivals := c.requests(t, t+substep)
		n := float64(serving)
		var st loadmodel.Point
		st, backlog = inst.Advance(backlog, arrivals/substep.Seconds()/n, substep.Seconds())
		shed := arrivals * st.Shed
		share := slo.ViolatingShare(st)
		cur.Offered += arrivals
		cur.Shed += shed
		cur.Violating += arrivals * share
		if share > slo.AllowedShed() {
			cur.StartingWhileViolating = max(cur.StartingWhileViolating, len(starting))
		}
		cur.Metric = math.Max(cur.Metric, st.Metric)
		cur.Concurrency = math.Max(cur.Concurrency, st.InFlight)
		cur.TTFABMs = math.Max(cur.TTFABMs, st.TTFABMs)
		res.Offered += arrivals
		res.Shed += shed
		instSeconds += float64(serving+len(starting)) * substep.Seconds()
		res.PeakInstances = max(res.PeakInstances, serving+len(starting))
		if len(recent) == cap(recent) {
			recent = append(recent[:0], recent[1:]...)
		}
		recent = append(recent, st)
		tickInvocations += arrivals / n

		end := t + substep
		if f.Scaling != nil && end >= firstPeriod && (end-firstPeriod)%tick == 0 {
			// The datapoint is the highest metric of its window, and a scattered run draws it at the state that
			// had it.
			var tickState loadmodel.Point
			tickMetric := 0.0
			for _, r := range recent {
				if r.Metric >= tickMetric {
					tickState, tickMetric = r, r.Metric
				}
			}
			if rng != nil {
				z := rng.NormFloat64()
				if end == firstPeriod {
					z = partialDeviate(z, firstPeriod, tick)
				}
				tickMetric = f.Scatter.Draw(inst, tickState, z)
			}
			closed = append(closed, datapoint{evalAt: end + lag, metric: tickMetric, invocations: tickInvocations})
			tickInvocations = 0
		}
		if f.Scaling != nil && len(closed) > 0 && closed[0].evalAt <= end {
			dp := closed[0]
			closed = closed[1:]
			for _, a := range alarms {
				if a.invocations {
					a.add(dp.invocations)
				} else {
					a.add(dp.metric)
				}
			}
			if len(starting) == 0 {
				want, ev, changed := decide(epoch.Add(end), serving, lo, hi, pols, alarms)
				if changed {
					ev.AtS = end.Seconds()
					if want > serving {
						ev.ServingAtS = (end + tTotal).Seconds()
						res.ScaleOuts++
						if ev.AtS-lastScaleIn < flapWindow {
							res.Flaps = append(res.Flaps, Flap{ScaleInAtS: lastScaleIn, ScaleOutAtS: ev.AtS})
						}
					} else {
						res.ScaleIns++
						lastScaleIn = ev.AtS
					}
					res.Events = append(res.Events, ev)
					for serving+len(starting) < want {
						starting = append(starting, end+tTotal)
					}
					if serving > want {
						// The removed instances' queued requests are counted on those left (none is lost).
						backlog *= float64(serving) / float64(want)
						serving = want
						for j := range pols {
							pols[j].State.Completed(false, epoch.Add(end))
						}
					}
				}
			}
		}
		if end-rowStart >= bucket || i == steps-1 {
			flush(int(rowStart/bucket), (end - rowStart).Seconds())
			rowStart = end
		}
	}
	res.InstanceHours = instSeconds / 3600
	res.Cost = res.InstanceHours * f.PricePerHour
	res.Worst = worst(res.Minutes, f)
	return res, true
}

// partialDeviate turns the standard normal deviate z of a full period's datapoint into the deviate of a
// period only length long: the Maximum of fewer samples. With the samples of a period taken as independent
// (one a second: emulator/metrics.go), the Maximum of k of them has the k-th power of one's distribution, so a
// period of length L has P(max ≤ x) = P(full period's max ≤ x)^(L/tick): z's quantile u becomes u^(tick/L).
func partialDeviate(z float64, length, tick time.Duration) float64 {
	if length >= tick {
		return z
	}
	u := 0.5 * math.Erfc(-z/math.Sqrt2)
	u = math.Pow(u, float64(tick)/float64(length))
	// u in (0, 1]; the ends are clamped so that Draw never multiplies an infinity by a zero spread.
	return math.Max(-8, math.Min(8, math.Sqrt2*math.Erfinv(2*u-1)))
}

// decide asks autoscale.Decide for the new capacity and keeps the policies' cooldown memory.
func decide(now time.Time, capacityNow, lo, hi int, pols []autoscale.Policy, alarms []*alarm) (int, Event, bool) {
	in := autoscale.Input{Now: now, Capacity: capacityNow, Min: lo, Max: hi, Policies: make([]autoscale.Policy, len(pols))}
	copy(in.Policies, pols)
	invoked := false
	for i := range in.Policies {
		in.Policies[i].Alarms = nil
	}
	for _, a := range alarms {
		if !a.inAlarm {
			continue
		}
		p := &in.Policies[a.policyIndex]
		// As the emulator does, the decision sees the alarm's newest datapoint.
		p.Alarms = append(p.Alarms, autoscale.Alarm{Name: a.name, Threshold: a.threshold, ScaleOut: a.greater,
			Datapoints: []float64{a.points[len(a.points)-1]}})
		invoked = true
	}
	if !invoked {
		return capacityNow, Event{}, false
	}
	d := autoscale.Decide(in)
	for i := range pols {
		pols[i].State = d.States[i]
	}
	if !d.Scale || d.Capacity == capacityNow {
		return capacityNow, Event{}, false
	}
	return d.Capacity, Event{From: capacityNow, To: d.Capacity, Policy: d.Policy, Reason: d.Reason}, true
}

// initialFleet is the fleet the trace starts on: as many instances as keep the first rate at or below the
// scale-out target (where target tracking would have left it), within the bounds.
func initialFleet(inst loadmodel.Model, s *Scaling, rate float64) int {
	for n := s.MinInstances; n <= s.MaxInstances; n++ {
		per := rate / float64(n)
		v := inst.At(per).Metric
		if s.Metric == MetricInvocations {
			v = per * 60
		}
		if v <= s.TargetValue {
			return n
		}
	}
	return s.MaxInstances
}

// worst picks the worst row (most violating requests, then the highest TTFAB) and says why.
func worst(ms []Minute, f Fleet) *Worst {
	if len(ms) == 0 {
		return nil
	}
	best := 0
	for i, m := range ms {
		b := ms[best]
		if m.Violating > b.Violating || m.Violating == b.Violating && m.TTFABMs > b.TTFABMs {
			best = i
		}
	}
	m := ms[best]
	inst := f.Instance
	at := time.Duration(float64(m.Minute) * float64(time.Second) * bucketS(f))
	why := fmt.Sprintf("at %s: %s rps offered to %d serving instance(s) (%s rps each; one instance completes at most %s rps): metric %s, in flight %s per instance, p%d TTFAB %s ms (SLO %s ms)",
		at, loadmodel.Format(m.OfferedRPS), m.Serving, loadmodel.Format(m.LoadPerInstanceRPS), loadmodel.Format(inst.CapacityRPS),
		loadmodel.Format(m.Metric), loadmodel.Format(m.Concurrency), inst.SLO.Percentile, loadmodel.Format(m.TTFABMs), loadmodel.Format(inst.SLO.TTFABMs))
	if m.Shed > 0 {
		why += fmt.Sprintf(", %s requests shed with 503", loadmodel.Format(m.Shed))
	}
	if m.Offered > 0 {
		why += fmt.Sprintf(", %s%% of its requests over the SLO or shed (at most %s%% allowed)", loadmodel.Format(100*m.Violating/m.Offered), loadmodel.Format(100*inst.SLO.AllowedShed()))
	}
	switch {
	case !m.Violates:
		why += "; within the SLO"
	case f.Scaling == nil:
		why += fmt.Sprintf("; the fixed fleet of %d cannot carry it", f.Fixed)
	case m.StartingWhileViolating > 0:
		why += fmt.Sprintf("; %d instance(s) still starting (T_total %s s after the scale-out)", m.StartingWhileViolating, loadmodel.Format(f.TTotalS))
	case m.Serving >= f.Scaling.MaxInstances:
		why += fmt.Sprintf("; the fleet is at its maximum of %d instance(s)", f.Scaling.MaxInstances)
	default:
		why += "; the scale-out alarm had not yet seen its breaching datapoints, or a cooldown held the next scale-out"
	}
	return &Worst{Minute: m.Minute, Why: why}
}

func bucketS(f Fleet) float64 {
	if f.Bucket <= 0 {
		return 60
	}
	return f.Bucket.Seconds()
}
