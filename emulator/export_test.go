package emulator

import (
	"fmt"
	"testing"
	"time"
)

// Internals lent to the external tests (package emulator_test), which drive the emulator through the shared
// harness in emulator/emulatortest; that package imports this one, so tests using it cannot live inside it.
const (
	AccessKeyPrefix      = accessKeyPrefix
	ContentTypeJSON11    = contentTypeJSON11
	EnvInvocationTimeout = envInvocationTimeout
	NamespaceSageMaker   = namespaceSageMaker
	MetricModelLatency   = metricModelLatency
	StatusInService      = statusInService
	StatusCreating       = statusCreating
	MaxPayload           = maxPayload
)

// Internal functions and types the external tests call.
var (
	RandomToken  = randomToken
	CanonicalDir = canonicalDir
	LogGroup     = logGroup
	EndpointDims = endpointDims
	ResourceIDOf = resourceIDOf
	LoadState    = loadState
	// BadSchedules are Schedule values PutScheduledAction refuses, each broken in one way.
	BadSchedules = badSchedules
)

// resourceIDOf is the Application Auto Scaling resource id of an endpoint's variant, as the tests register it.
func resourceIDOf(endpoint, variant string) string {
	return fmt.Sprintf("endpoint/%s/variant/%s", endpoint, variant)
}

// State is the persisted state, as state.json holds it.
type State = state

// InstanceIDs lists the ids of the endpoint's serving instances.
func (e *Emulator) InstanceIDs(name string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ids []string
	if f := e.fleets[name]; f != nil {
		for _, in := range f.instances {
			if in.ready.Load() && !in.draining.Load() {
				ids = append(ids, in.id)
			}
		}
	}
	return ids
}

// InstancePID returns the process id and instance id of the endpoint's first serving instance.
func (e *Emulator) InstancePID(t *testing.T, name string) (int, string) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if f := e.fleets[name]; f != nil {
		for _, in := range f.instances {
			if in.ready.Load() && !in.draining.Load() && in.cmd != nil && in.cmd.Process != nil {
				return in.cmd.Process.Pid, in.id
			}
		}
	}
	t.Fatalf("endpoint %s has no serving instance", name)
	return 0, ""
}

// SetFirstInstancePort points the router at port for the endpoint's first instance; it returns that
// instance's id and a function that reports whether the router has marked it unhealthy.
func (e *Emulator) SetFirstInstancePort(name string, port int32) (id string, unhealthy func() bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	first := e.fleets[name].instances[0]
	first.port.Store(port)
	return first.id, first.unhealthy.Load
}

// AddMetric records one datapoint of a metric of the endpoint's variant.
func (e *Emulator) AddMetric(ns, metric, endpoint, variant string, t time.Time, v float64) {
	e.metrics.add(ns, metric, endpointDims(endpoint, variant), t, v)
}

// CloseUnrun releases an emulator that was opened but never run: its listener and its lock.
func (e *Emulator) CloseUnrun() {
	e.listener.Close()
	e.lock.Close()
}

// AppendLog appends one event to a log stream of a log group, as an instance's output does.
func (e *Emulator) AppendLog(group, stream string, t time.Time, msg string) {
	e.logs.append(group, stream, t, msg)
}

// AddIsolatedMetric records one datapoint of a metric of the endpoint's variant under one more dimension,
// Injected=<tag>: a series the emulator's own sampler never rewrites (it rewrites the two-dimension
// ConcurrentRequestsPerModel series as its period goes), so an alarm on it sees exactly what a test injects.
func (e *Emulator) AddIsolatedMetric(ns, metric, endpoint, variant, tag string, t time.Time, v float64) {
	e.metrics.add(ns, metric, append(endpointDims(endpoint, variant), dimension{Name: "Injected", Value: tag}), t, v)
}

// ProductionVariantInstanceTypes is the service model's ProductionVariantInstanceType enum.
func ProductionVariantInstanceTypes() []string {
	return serviceModels["SageMaker"].Shapes["ProductionVariantInstanceType"].Enum
}
