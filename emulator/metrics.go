package emulator

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Metric names the emulator publishes in the AWS/SageMaker namespace, with dimensions EndpointName and
// VariantName.
const (
	namespaceSageMaker      = "AWS/SageMaker"
	metricConcurrent        = "ConcurrentRequestsPerModel"
	metricInvocations       = "Invocations"
	metricModelLatency      = "ModelLatency"
	metricInvocation5XX     = "Invocation5XXErrors"
	metricInvocation4XX     = "Invocation4XXErrors"
	metricRetention         = 24 * time.Hour
	samplesPerMetricPeriod  = 10
	minimumSampleResolution = 20 * time.Millisecond
	// standardPerHighResolution is how many high-resolution periods make one standard period: SageMaker's
	// high-resolution metrics emit every 10 s, the standard ones (the invocation metrics) once a minute.
	standardPerHighResolution = 6
	// subMinuteRetention is how long CloudWatch keeps datapoints of a period under 60 s: "Data points with a
	// period of less than 60 seconds are available for 3 hours."
	subMinuteRetention = 3 * time.Hour
)

// highResolutionMetrics are the AWS/SageMaker metrics the emulator publishes at the high resolution (one
// datapoint per instance per metric period); every other metric is standard resolution (one period of
// standardPerHighResolution metric periods).
var highResolutionMetrics = map[string]bool{metricConcurrent: true}

// agg is the statistic set of one bucket: what CloudWatch keeps per datapoint, plus the raw samples so that
// percentiles (ExtendedStatistic pNN) are exact rather than estimated.
type agg struct {
	t                     time.Time
	sum, count, min, maxv float64
	samples               []float64
	// sampled is how many of the samples, the first ones, metricStore.set wrote: the interval's values so far,
	// which the next set replaces; the samples after them were added (metricStore.add) and stay.
	sampled int
}

func (a *agg) add(v float64) {
	a.samples = append(a.samples, v)
	if a.count == 0 {
		a.min, a.maxv = v, v
	} else {
		a.min, a.maxv = math.Min(a.min, v), math.Max(a.maxv, v)
	}
	a.sum += v
	a.count++
}

func (a *agg) merge(b agg) {
	if b.count == 0 {
		return
	}
	a.samples = append(a.samples, b.samples...)
	if a.count == 0 {
		a.min, a.maxv = b.min, b.maxv
	} else {
		a.min, a.maxv = math.Min(a.min, b.min), math.Max(a.maxv, b.maxv)
	}
	a.sum += b.sum
	a.count += b.count
}

// percentilePattern matches the percentile statistics CloudWatch accepts: p0 to p100 with up to two decimals
// (p50, p95, p99.9).
var percentilePattern = regexp.MustCompile(`^p(100|[0-9]{1,2})(\.[0-9]{1,2})?$`)

// parsePercentile returns the percentile of an extended statistic name such as p95 or p99.9.
func parsePercentile(name string) (float64, bool) {
	if !percentilePattern.MatchString(name) {
		return 0, false
	}
	p, err := strconv.ParseFloat(name[1:], 64)
	if err != nil || p > 100 {
		return 0, false
	}
	return p, true
}

// percentile is the exact nearest-rank percentile of the samples: the smallest sample such that at least p
// percent of the samples are less than or equal to it.
func percentile(samples []float64, p float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	// The epsilon keeps a rank that is whole in decimal (99.9% of 1000) from rounding up in binary.
	rank := int(math.Ceil(p/100*float64(len(s)) - 1e-9))
	return s[min(max(rank, 1), len(s))-1]
}

// stat returns the named statistic and whether the name is one CloudWatch knows: a basic statistic or a
// percentile (pNN).
func (a agg) stat(name string) (float64, bool) {
	if p, ok := parsePercentile(name); ok {
		return percentile(a.samples, p), true
	}
	switch name {
	case "Maximum":
		return a.maxv, true
	case "Minimum":
		return a.min, true
	case "Sum":
		return a.sum, true
	case "SampleCount":
		return a.count, true
	case "Average":
		return a.sum / a.count, true
	}
	return 0, false
}

type series struct {
	buckets []agg
}

// metricStore holds datapoints in memory, each metric at its publishing resolution: res (the emulator's
// metric period, SageMaker's 10 s by default) for the high-resolution metrics, standardPerHighResolution × res
// (a minute by default) for the others.
type metricStore struct {
	res    time.Duration
	mu     sync.Mutex
	series map[string]*series
}

func newMetricStore(res time.Duration) *metricStore {
	return &metricStore{res: res, series: map[string]*series{}}
}

// resolution is the interval at which the named metric is published: one datapoint timestamp per interval.
func (m *metricStore) resolution(name string) time.Duration {
	if highResolutionMetrics[name] {
		return m.res
	}
	return m.res * standardPerHighResolution
}

func seriesKey(ns, name string, dims []dimension) string {
	parts := make([]string, 0, len(dims))
	for _, d := range dims {
		parts = append(parts, d.Name+"="+d.Value)
	}
	sort.Strings(parts)
	return ns + "|" + name + "|" + strings.Join(parts, ",")
}

// add records one value at time t, stamped with the start of the metric's publishing interval.
func (m *metricStore) add(ns, name string, dims []dimension, t time.Time, v float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bucketLocked(ns, name, dims, t).add(v)
}

// set replaces what the previous set wrote in the datapoint of the publishing interval that holds t by the
// values given (one per instance): what an interval publishes is known only when it ends, so the sampler
// rewrites the current one as it goes. Values add recorded in the interval stay: a rewrite replaces the
// sampler's own values, never another source's.
func (m *metricStore) set(ns, name string, dims []dimension, t time.Time, values []float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bucketLocked(ns, name, dims, t)
	added := slices.Clone(b.samples[b.sampled:])
	*b = agg{t: b.t}
	for _, v := range values {
		b.add(v)
	}
	b.sampled = len(values)
	for _, v := range added {
		b.add(v)
	}
}

// bucketLocked returns the bucket of the publishing interval that holds t, creating it in time order (and
// dropping what is past retention); m.mu must be held.
func (m *metricStore) bucketLocked(ns, name string, dims []dimension, t time.Time) *agg {
	bt := t.Truncate(m.resolution(name))
	key := seriesKey(ns, name, dims)
	s := m.series[key]
	if s == nil {
		s = &series{}
		m.series[key] = s
	}
	i := len(s.buckets)
	for i > 0 && s.buckets[i-1].t.After(bt) {
		i--
	}
	if i > 0 && s.buckets[i-1].t.Equal(bt) {
		return &s.buckets[i-1]
	}
	s.buckets = slices.Insert(s.buckets, i, agg{t: bt})
	cut := 0
	for cut < len(s.buckets) && s.buckets[cut].t.Before(t.Add(-metricRetention)) {
		cut++
	}
	s.buckets = s.buckets[cut:]
	if i < cut {
		// t itself is past retention: the value is dropped.
		return &agg{t: bt}
	}
	return &s.buckets[i-cut]
}

// query aggregates the datapoints stamped in [start, end) into buckets of the given period starting at start
// (start, start+period, ...), oldest first; a period is a datapoint only when data fell in it. The caller
// aligns start as CloudWatch does. Data stamped before since (past CloudWatch's retention at this period) is
// left out.
func (m *metricStore) query(ns, name string, dims []dimension, since, start, end time.Time, period time.Duration) []agg {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.series[seriesKey(ns, name, dims)]
	if s == nil {
		return nil
	}
	var out []agg
	for _, b := range s.buckets {
		if b.t.Before(start) || b.t.Before(since) || !b.t.Before(end) || b.count == 0 {
			continue
		}
		pt := start.Add(b.t.Sub(start) / period * period).UTC()
		if n := len(out); n > 0 && out[n-1].t.Equal(pt) {
			out[n-1].merge(b)
			continue
		}
		a := agg{t: pt}
		a.merge(b)
		out = append(out, a)
	}
	return out
}

func endpointDims(endpoint, variant string) []dimension {
	return []dimension{{Name: "EndpointName", Value: endpoint}, {Name: "VariantName", Value: variant}}
}

// sampleLoop samples every serving instance's concurrency several times per metric period and publishes
// ConcurrentRequestsPerModel as SageMaker does, once per metric period (10 s by default) per instance: the
// highest in-flight count of the instance during the period, so short bursts between samples still show in
// Maximum while SampleCount, Sum and Average count one datapoint per instance and period, not one per sample.
func (e *Emulator) sampleLoop() {
	every := max(e.opts.MetricPeriod/samplesPerMetricPeriod, minimumSampleResolution)
	t := time.NewTicker(every)
	defer t.Stop()
	// peaks holds, per endpoint and instance, the highest count of the current period so far.
	var period time.Time
	peaks := map[string]map[string]float64{}
	dims := map[string][]dimension{}
	for {
		select {
		case <-e.done:
			return
		case now := <-t.C:
			if p := now.Truncate(e.opts.MetricPeriod); !p.Equal(period) {
				period = p
				clear(peaks)
			}
			e.mu.Lock()
			for name, f := range e.fleets {
				ep := e.st.Endpoints[name]
				if ep == nil || (ep.Status != statusInService && ep.Status != statusUpdating) {
					continue
				}
				dims[name] = endpointDims(ep.Name, ep.Variant)
				for _, in := range f.instances {
					if !in.ready.Load() || in.draining.Load() {
						continue
					}
					v := float64(in.peak.Swap(in.outstanding.Load()))
					if peaks[name] == nil {
						peaks[name] = map[string]float64{}
					}
					if old, ok := peaks[name][in.id]; !ok || v > old {
						peaks[name][in.id] = v
					}
				}
			}
			e.mu.Unlock()
			for name, byInstance := range peaks {
				values := make([]float64, 0, len(byInstance))
				for _, v := range byInstance {
					values = append(values, v)
				}
				e.metrics.set(namespaceSageMaker, metricConcurrent, dims[name], period, values)
			}
		}
	}
}
