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
)

// agg is the statistic set of one bucket: what CloudWatch keeps per datapoint, plus the raw samples so that
// percentiles (ExtendedStatistic pNN) are exact rather than estimated.
type agg struct {
	t                     time.Time
	sum, count, min, maxv float64
	samples               []float64
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

// metricStore holds datapoints at one resolution (the emulator's metric period), in memory.
type metricStore struct {
	res    time.Duration
	mu     sync.Mutex
	series map[string]*series
}

func newMetricStore(res time.Duration) *metricStore {
	return &metricStore{res: res, series: map[string]*series{}}
}

func seriesKey(ns, name string, dims []dimension) string {
	parts := make([]string, 0, len(dims))
	for _, d := range dims {
		parts = append(parts, d.Name+"="+d.Value)
	}
	sort.Strings(parts)
	return ns + "|" + name + "|" + strings.Join(parts, ",")
}

// add records one value at time t.
func (m *metricStore) add(ns, name string, dims []dimension, t time.Time, v float64) {
	bt := t.Truncate(m.res)
	m.mu.Lock()
	defer m.mu.Unlock()
	key := seriesKey(ns, name, dims)
	s := m.series[key]
	if s == nil {
		s = &series{}
		m.series[key] = s
	}
	if n := len(s.buckets); n > 0 && s.buckets[n-1].t.Equal(bt) {
		s.buckets[n-1].add(v)
		return
	}
	b := agg{t: bt}
	b.add(v)
	s.buckets = append(s.buckets, b)
	cut := 0
	for cut < len(s.buckets) && s.buckets[cut].t.Before(t.Add(-metricRetention)) {
		cut++
	}
	s.buckets = s.buckets[cut:]
}

// query aggregates the datapoints in [start, end) into buckets of the given period (at least the store's
// resolution), aligned to the epoch, oldest first.
func (m *metricStore) query(ns, name string, dims []dimension, start, end time.Time, period time.Duration) []agg {
	if period < m.res {
		period = m.res
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.series[seriesKey(ns, name, dims)]
	if s == nil {
		return nil
	}
	var out []agg
	for _, b := range s.buckets {
		if b.t.Before(start) || !b.t.Before(end) {
			continue
		}
		pt := time.Unix(0, b.t.UnixNano()-b.t.UnixNano()%int64(period)).UTC()
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

// sampleLoop samples every serving instance's concurrency several times per metric period. Each sample is the
// highest in-flight count since the previous one, so short bursts between samples still show in Maximum.
func (e *Emulator) sampleLoop() {
	every := max(e.opts.MetricPeriod/samplesPerMetricPeriod, minimumSampleResolution)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.done:
			return
		case now := <-t.C:
			e.mu.Lock()
			for name, f := range e.fleets {
				ep := e.st.Endpoints[name]
				if ep == nil || (ep.Status != statusInService && ep.Status != statusUpdating) {
					continue
				}
				dims := endpointDims(ep.Name, ep.Variant)
				for _, in := range f.instances {
					if !in.ready.Load() || in.draining.Load() {
						continue
					}
					v := in.peak.Swap(in.outstanding.Load())
					e.metrics.add(namespaceSageMaker, metricConcurrent, dims, now, float64(v))
				}
			}
			e.mu.Unlock()
		}
	}
}
