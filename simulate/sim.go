package simulate

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/autoscale"
	"github.com/speech-infra/speech-infra/capacity"
)

// Tick is the autoscaler's clock: the period of the high-resolution ConcurrentRequestsPerModel metric. Alarms
// are evaluated and autoscale.Decide is called once per tick; the fleet and its queues advance in 1-s steps.
const Tick = 10 * time.Second

// substep is the step of the fleet and queue model.
const substep = time.Second

// epoch is the wall-clock time a simulation starts at (the decision function needs times; only differences
// matter).
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Fleet is one configuration to simulate: the instance model, and either the scaling a plan deploys
// (Scaling, from capacity.ScalingSpecFor) or a fixed fleet of Fixed instances.
type Fleet struct {
	// Name says what the configuration is ("plan (s 1.25)", "fixed fleet of 12", ...).
	Name string
	// Instance is the measured behaviour of one instance.
	Instance Instance
	// Scaling is the deployed scaling; nil for a fixed fleet.
	Scaling *capacity.ScalingSpec
	// MaxInstances is the scalable target's maximum (the plan's, never above the allowed maximum).
	MaxInstances int
	// Fixed is the size of a fixed fleet (Scaling nil).
	Fixed int
	// CloudWatchRatio is ConcurrentRequestsPerModel ÷ client concurrency (the plan's).
	CloudWatchRatio float64
	// SLOMs and SLOPercentile are the latency objective.
	SLOMs         float64
	SLOPercentile int
	// PricePerHour is the price of one instance-hour, in US dollars.
	PricePerHour float64
}

// Minute is one simulated minute.
type Minute struct {
	// Minute counts from 0.
	Minute int `json:"minute"`
	// OfferedRPS is the mean offered rate.
	OfferedRPS float64 `json:"offered_rps"`
	// Serving and Starting are the instance counts at the end of the minute.
	Serving  int `json:"serving"`
	Starting int `json:"starting"`
	// LoadPerInstanceRPS is the mean offered rate per serving instance.
	LoadPerInstanceRPS float64 `json:"load_per_instance_rps"`
	// Concurrency is the highest per-instance concurrency (requests waiting and running) in the minute.
	Concurrency float64 `json:"concurrency"`
	// TTFABMs is the highest estimated TTFAB percentile (the SLO's) in the minute.
	TTFABMs float64 `json:"ttfab_ms"`
	// Offered and Shed count the minute's requests and those rejected with 503 by a full queue.
	Offered float64 `json:"offered"`
	Shed    float64 `json:"shed"`
	// ShedRPS is Shed per second.
	ShedRPS float64 `json:"shed_rps"`
	// Violates is true when the TTFAB estimate exceeds the SLO or more requests were shed than the
	// percentile allows (a shed request never meets the SLO).
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

// Worst is the worst minute and why.
type Worst struct {
	Minute int    `json:"minute"`
	Why    string `json:"why"`
}

// Result is the simulation of one fleet configuration on one trace.
type Result struct {
	// Name is the Fleet's.
	Name string `json:"name"`
	// MinInstances and MaxInstances bound the fleet (equal for a fixed fleet).
	MinInstances int `json:"min_instances"`
	MaxInstances int `json:"max_instances"`
	// Minutes are the per-minute rows.
	Minutes []Minute `json:"minutes,omitempty"`
	// Events are the scaling decisions that changed capacity.
	Events []Event `json:"events,omitempty"`
	// ViolationMinutes counts the minutes that violate the SLO.
	ViolationMinutes int `json:"violation_minutes"`
	// Offered and Shed count requests over the whole trace.
	Offered float64 `json:"offered"`
	Shed    float64 `json:"shed"`
	// PeakInstances is the most instances (serving and starting) at once.
	PeakInstances int `json:"peak_instances"`
	// InstanceHours counts serving and starting instances (both are billed); Cost is their price.
	InstanceHours float64 `json:"instance_hours"`
	Cost          float64 `json:"cost_usd"`
	// Worst is the worst minute; nil for an empty trace.
	Worst *Worst `json:"worst,omitempty"`
}

// MeetsSLO reports whether no minute violated the SLO.
func (r Result) MeetsSLO() bool { return r.ViolationMinutes == 0 }

// alarm is a CloudWatch alarm evaluated on the simulated metric.
type alarm struct {
	name        string
	period      int // in ticks
	evals       int
	toAlarm     int
	threshold   float64
	greater     bool
	maximum     bool // Maximum statistic, else Average
	points      []float64
	inAlarm     bool
	acc         float64
	accN        int
	policyIndex int
}

// add feeds one tick's datapoint (the 10-s Maximum); at the end of each period the alarm evaluates.
func (a *alarm) add(v float64) {
	if a.maximum {
		if a.accN == 0 || v > a.acc {
			a.acc = v
		}
	} else {
		a.acc += v
	}
	a.accN++
	if a.accN < a.period {
		return
	}
	dp := a.acc
	if !a.maximum {
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

// policies turns a scaling spec into autoscale.Decide's policies and the alarms that invoke them: the target
// tracking policy's high alarm (as Application Auto Scaling creates it for the high-resolution metric: 3 × 10-s
// datapoints above the target, Maximum; scale-in is disabled, so no low alarm) and the step scale-in policy
// with its alarm from the spec.
func policies(spec *capacity.ScalingSpec) ([]autoscale.Policy, []*alarm) {
	pols := []autoscale.Policy{
		{Name: spec.ScaleOut.PolicyName, TargetTracking: &autoscale.TargetTracking{
			TargetValue:      spec.ScaleOut.TargetValue,
			ScaleOutCooldown: time.Duration(spec.ScaleOut.ScaleOutCooldownS) * time.Second,
			ScaleInCooldown:  300 * time.Second, DisableScaleIn: true}},
		{Name: spec.ScaleIn.PolicyName, Step: &autoscale.StepScaling{
			AdjustmentType: autoscale.ChangeInCapacity, Aggregation: autoscale.AggregateMaximum,
			Cooldown: time.Duration(spec.ScaleIn.CooldownS) * time.Second,
			Steps:    []autoscale.StepAdjustment{{Upper: ptr(0.0), Adjustment: spec.ScaleIn.Adjustment}}}},
	}
	alarms := []*alarm{{name: spec.ScaleOut.PolicyName + "-AlarmHigh", period: 1, evals: 3, toAlarm: 3,
		threshold: spec.ScaleOut.TargetValue, greater: true, maximum: true, policyIndex: 0}}
	for _, a := range spec.Alarms {
		if !a.TriggersScaleIn {
			continue
		}
		period := max(1, int(math.Round(float64(a.PeriodS)/Tick.Seconds())))
		alarms = append(alarms, &alarm{name: a.Name, period: period, evals: a.EvaluationPeriods, toAlarm: a.DatapointsToAlarm,
			threshold: a.Threshold, greater: strings.HasPrefix(a.Comparison, "GreaterThan"), maximum: a.Statistic != "Average", policyIndex: 1})
	}
	return pols, alarms
}

func ptr[T any](v T) *T { return &v }

// Run simulates fleet f on trace tr, deterministically: every second the offered requests arrive, spread
// evenly over the serving instances (least outstanding requests); every Tick the alarms take the 10-s
// Maximum of per-instance concurrency × the CloudWatch ratio and autoscale.Decide decides; an added instance
// serves T_total after the decision. While instances are starting the endpoint is Updating and Application
// Auto Scaling waits, as it does on SageMaker (and in the emulator).
//
// Per instance at an offered rate λ: when Little's law has a fixed point c = λ·R(c) on the measured curve,
// the instance sits at c; otherwise (λ above the highest measured throughput within the queue depth) requests
// pile up, completing at the measured throughput of the concurrency reached, and what exceeds the queue depth
// is shed with 503.
func Run(tr Trace, f Fleet) Result {
	inst := f.Instance
	depth := float64(inst.QueueMaxDepth)
	res := Result{Name: f.Name}
	var pols []autoscale.Policy
	var alarms []*alarm
	lo, hi := f.Fixed, f.Fixed
	if f.Scaling != nil {
		pols, alarms = policies(f.Scaling)
		lo, hi = f.Scaling.MinInstances, f.MaxInstances
	}
	res.MinInstances, res.MaxInstances = lo, hi
	serving := hi
	if f.Scaling != nil {
		serving = initialFleet(inst, f, tr.RateAt(0), lo, hi)
	}
	var starting []time.Duration // ready times, in order
	ratio := f.CloudWatchRatio
	if !(ratio > 0) {
		ratio = 1
	}
	okFraction := float64(f.SLOPercentile) / 100
	total := 0.0 // requests in the fleet (waiting and running)
	tickMax := 0.0
	var cur Minute
	instSeconds := 0.0
	flush := func(m int) {
		cur.Minute = m
		cur.OfferedRPS = cur.Offered / 60
		cur.ShedRPS = cur.Shed / 60
		cur.Serving, cur.Starting = serving, len(starting)
		if cur.Serving > 0 {
			cur.LoadPerInstanceRPS = cur.OfferedRPS / float64(cur.Serving)
		}
		cur.Violates = cur.TTFABMs > f.SLOMs || cur.Offered > 0 && cur.Shed > (1-okFraction)*cur.Offered+1e-9
		if cur.Violates {
			res.ViolationMinutes++
		}
		res.Minutes = append(res.Minutes, cur)
		cur = Minute{}
	}
	steps := int((tr.Duration + substep - 1) / substep)
	for i := range steps {
		t := time.Duration(i) * substep
		for len(starting) > 0 && starting[0] <= t {
			serving++
			starting = starting[1:]
		}
		arrivals := tr.Requests(t, t+substep)
		n := float64(serving)
		lambda := arrivals / substep.Seconds() / n
		cfix, ok := inst.Concurrency(lambda)
		if ok && total <= n*cfix+1e-9 {
			total = n * cfix
		} else {
			total += arrivals - n*inst.Throughput(total/n)*substep.Seconds()
			if ok && total < n*cfix {
				total = n * cfix
			}
			total = math.Max(total, 0)
		}
		shed := 0.0
		if total > n*depth {
			shed, total = total-n*depth, n*depth
		}
		c := total / n
		cur.Offered += arrivals
		cur.Shed += shed
		cur.Concurrency = math.Max(cur.Concurrency, c)
		cur.TTFABMs = math.Max(cur.TTFABMs, inst.TTFABMs(c))
		res.Offered += arrivals
		res.Shed += shed
		instSeconds += float64(serving+len(starting)) * substep.Seconds()
		res.PeakInstances = max(res.PeakInstances, serving+len(starting))
		tickMax = math.Max(tickMax, c*ratio)

		end := t + substep
		if f.Scaling != nil && end%Tick == 0 {
			for _, a := range alarms {
				a.add(tickMax)
			}
			tickMax = 0
			if len(starting) == 0 {
				want, ev, changed := decide(epoch.Add(end), serving, lo, hi, pols, alarms)
				if changed {
					ev.AtS = end.Seconds()
					if want > serving {
						ev.ServingAtS = end.Seconds() + inst.TTotalS
					}
					res.Events = append(res.Events, ev)
					for serving+len(starting) < want {
						starting = append(starting, end+time.Duration(inst.TTotalS*float64(time.Second)))
					}
					for serving > want {
						serving--
					}
				}
			}
		}
		if end%time.Minute == 0 || i == steps-1 {
			flush(int(t / time.Minute))
		}
	}
	res.InstanceHours = instSeconds / 3600
	res.Cost = res.InstanceHours * f.PricePerHour
	res.Worst = worst(res.Minutes, f, inst)
	return res
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
func initialFleet(inst Instance, f Fleet, rate float64, lo, hi int) int {
	target := f.Scaling.ScaleOut.TargetValue / math.Max(f.CloudWatchRatio, 1e-9)
	for n := lo; n <= hi; n++ {
		if c, ok := inst.Concurrency(rate / float64(n)); ok && c <= target {
			return n
		}
	}
	return hi
}

// worst picks the worst minute (most shed, then the highest TTFAB) and says why.
func worst(ms []Minute, f Fleet, inst Instance) *Worst {
	if len(ms) == 0 {
		return nil
	}
	best := 0
	for i, m := range ms {
		b := ms[best]
		if m.Shed > b.Shed || m.Shed == b.Shed && m.TTFABMs > b.TTFABMs {
			best = i
		}
	}
	m := ms[best]
	xmax, _ := inst.MaxThroughput()
	why := fmt.Sprintf("%s rps offered to %d serving instance(s) (%s rps each; one instance completes at most %s rps within its queue depth %d): concurrency %s per instance, p%d TTFAB ≈ %s ms (SLO %s ms)",
		capacity.FormatNumber(m.OfferedRPS), m.Serving, capacity.FormatNumber(m.LoadPerInstanceRPS), capacity.FormatNumber(xmax),
		inst.QueueMaxDepth, capacity.FormatNumber(m.Concurrency), f.SLOPercentile, capacity.FormatNumber(m.TTFABMs), capacity.FormatNumber(f.SLOMs))
	if m.Shed > 0 {
		why += fmt.Sprintf(", %s requests shed with 503", capacity.FormatNumber(m.Shed))
	}
	switch {
	case !m.Violates:
		why += "; within the SLO"
	case f.Scaling == nil:
		why += fmt.Sprintf("; the fixed fleet of %d cannot carry it", f.Fixed)
	case m.Starting > 0:
		why += fmt.Sprintf("; %d instance(s) still starting (T_total %s s after the scale-out)", m.Starting, capacity.FormatNumber(inst.TTotalS))
	case m.Serving >= f.MaxInstances:
		why += fmt.Sprintf("; the fleet is at its maximum of %d instance(s)", f.MaxInstances)
	default:
		why += "; the scale-out alarm had not yet seen 3 breaching 10-s datapoints, or a cooldown held the next scale-out"
	}
	return &Worst{Minute: m.Minute, Why: why}
}
