package emulator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// fleet is the running side of one endpoint: its instance processes. The reconcile loop moves the fleet toward
// the endpoint's desired count and the endpoint status along Creating/Updating → InService.
type fleet struct {
	name string
	kick chan struct{}
	// instances is guarded by Emulator.mu.
	instances []*instance
	// failures counts the consecutive failed attempts to bring an InService endpoint's fleet back to its
	// desired count, and retryAt is when the next attempt may start; both guarded by Emulator.mu.
	failures int
	retryAt  time.Time
}

// Health checking, as SageMaker does for a serving instance: /ping every interval with a short timeout; an
// instance that fails one check receives no new requests, one that fails unhealthyThreshold checks in a row is
// killed and replaced.
const (
	// DefaultHealthCheckInterval is how often a serving instance's /ping is checked unless
	// Options.HealthCheckInterval says otherwise.
	DefaultHealthCheckInterval = 5 * time.Second
	// healthCheckTimeout bounds one /ping check (less when the interval is shorter).
	healthCheckTimeout = 2 * time.Second
	// unhealthyThreshold is how many consecutive failed checks make an instance replaced.
	unhealthyThreshold = 3
	// killWait bounds how long a killed instance's process may take to be reaped.
	killWait = 10 * time.Second
)

// DefaultInstanceQuota is how many instances of one instance type all endpoints together may run unless
// Options.InstanceQuota says otherwise: the emulator's stand-in for the account-level SageMaker quota
// "<instance type> for endpoint usage". It leaves room for a blue/green update of a 4-instance endpoint.
const DefaultInstanceQuota = 8

// startBatch bounds how many instances one reconcile step starts at once; the next step starts the rest.
const startBatch = 4

// Replacement retries of an InService endpoint back off from retryBase, doubling up to retryMax.
const (
	retryBase = 2 * time.Second
	retryMax  = 2 * time.Minute
)

// healthInterval is the configured health-check interval.
func (e *Emulator) healthInterval() time.Duration {
	if e.opts.HealthCheckInterval > 0 {
		return e.opts.HealthCheckInterval
	}
	return DefaultHealthCheckInterval
}

// instanceQuota is the configured per-instance-type quota.
func (e *Emulator) instanceQuota() int {
	if e.opts.InstanceQuota > 0 {
		return e.opts.InstanceQuota
	}
	return DefaultInstanceQuota
}

// instance is one container process serving on its own loopback port.
type instance struct {
	id       string
	endpoint string
	stream   string
	// instanceType is the instance type of the variant the instance runs (its instance-type profile's key).
	instanceType string
	// port is the loopback port the container serves on, set when it starts.
	port     atomic.Int32
	cmd      *exec.Cmd
	exited   chan struct{}
	ready    atomic.Bool
	draining atomic.Bool
	stopping atomic.Bool
	// unhealthy is set while the instance fails its health checks (or a connection to it was refused); the
	// router sends it no new requests.
	unhealthy atomic.Bool
	// outstanding counts requests routed to the instance and not yet finished (queued or running); peak is the
	// highest value since the last metric sample.
	outstanding atomic.Int64
	peak        atomic.Int64
}

func (in *instance) acquire() {
	n := in.outstanding.Add(1)
	for {
		p := in.peak.Load()
		if n <= p || in.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (in *instance) release() { in.outstanding.Add(-1) }

func (f *fleet) kickNow() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// fleetLocked returns the fleet of an endpoint, starting its reconcile loop the first time; e.mu must be held.
func (e *Emulator) fleetLocked(name string) *fleet {
	if f, ok := e.fleets[name]; ok {
		return f
	}
	f := &fleet{name: name, kick: make(chan struct{}, 1)}
	e.fleets[name] = f
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.runFleet(f)
	}()
	f.kickNow()
	return f
}

func (e *Emulator) runFleet(f *fleet) {
	for {
		select {
		case <-e.done:
			return
		case <-f.kick:
		case <-time.After(2 * time.Second):
		}
		e.reconcile(f)
		e.mu.Lock()
		_, exists := e.st.Endpoints[f.name]
		if !exists && len(f.instances) == 0 {
			delete(e.fleets, f.name)
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
	}
}

// reconcile performs one step toward the desired state of the fleet's endpoint.
func (e *Emulator) reconcile(f *fleet) {
	e.mu.Lock()
	ep := e.st.Endpoints[f.name]
	if ep == nil || ep.Status == statusFailed {
		victims := f.instances
		f.instances = nil
		e.mu.Unlock()
		e.stopAll(victims, 0)
		return
	}
	if ep.Pending != nil {
		e.blueGreen(f, ep)
		return
	}
	// A count over the quota (a state file written with another quota, or edited) is lowered, with the reason
	// logged and shown as FailureReason, rather than started.
	if quota, room := e.instanceQuota(), e.instanceQuota()-e.usageLocked(ep.InstanceType, ep.Name); ep.Desired > room {
		want := max(room, 0)
		ep.FailureReason = fmt.Sprintf("the desired instance count %d is over the quota of %d %s instances for all endpoints; lowered to %d", ep.Desired, quota, ep.InstanceType, want)
		e.log.Printf("endpoint %s: %s", ep.Name, ep.FailureReason)
		ep.Desired, ep.Modified = want, time.Now().UTC()
		e.saveLocked()
	}
	var live []*instance
	for _, in := range f.instances {
		if !in.draining.Load() {
			live = append(live, in)
		}
	}
	switch {
	case len(live) > ep.Desired:
		// Scale in: the newest instances leave the router first, drain, then stop. They stay in the endpoint's
		// CurrentInstanceCount ("The number of instances associated with the variant.") until they are gone.
		victims := live[ep.Desired:]
		for _, in := range victims {
			in.draining.Store(true)
		}
		// The endpoint is Updating while they terminate, as SageMaker shows it: VariantStatus Updating
		// ("Updating capacity for the production variant.") with the StatusMessage "Terminating N instance(s).".
		e.terminatingLocked(ep, len(victims))
		e.mu.Unlock()
		e.stopAll(victims, drainTimeout)
		e.terminate(victims, f.name)
		e.mu.Lock()
		f.instances = slices.DeleteFunc(f.instances, func(in *instance) bool { return slices.Contains(victims, in) })
		ep.Instances = slices.DeleteFunc(ep.Instances, func(id string) bool {
			return slices.ContainsFunc(victims, func(in *instance) bool { return in.id == id })
		})
		e.saveLocked()
		e.settleLocked(ep, f)
		e.mu.Unlock()
	case len(live) < ep.Desired:
		if ep.Status == statusInService && time.Now().Before(f.retryAt) {
			// Replacing failed recently: wait for the back-off to pass.
			e.mu.Unlock()
			return
		}
		model, timeout, err := e.deploymentLocked(ep)
		if err != nil {
			// Nothing to start instances from: the endpoint fails with the reason rather than retrying forever.
			e.log.Printf("endpoint %s: %v", ep.Name, err)
			ep.Status, ep.FailureReason, ep.Modified = statusFailed, err.Error(), time.Now().UTC()
			e.saveLocked()
			e.mu.Unlock()
			f.kickNow()
			return
		}
		var starting []*instance
		for i := len(live); i < min(ep.Desired, len(live)+startBatch); i++ {
			id := e.reusableIDLocked(ep, f)
			if id == "" {
				e.st.NextInstance++
				id = fmt.Sprintf("i-%05d", e.st.NextInstance)
			}
			in := newInstance(ep, id, ep.InstanceType)
			starting = append(starting, in)
			f.instances = append(f.instances, in)
		}
		e.saveLocked()
		e.mu.Unlock()

		errs := e.startEach(starting, model, timeout)

		select {
		case <-e.done:
			// Shutting down is no failure: what started stays in the fleet for Run to stop, and the endpoint
			// resumes when the emulator starts again.
			return
		default:
		}
		e.mu.Lock()
		var failure error
		var started []*instance
		for i, in := range starting {
			if errs[i] != nil {
				failure = errs[i]
				f.instances = slices.DeleteFunc(f.instances, func(x *instance) bool { return x == in })
				e.wg.Add(1)
				go func() {
					defer e.wg.Done()
					e.stopInstance(in)
				}()
				continue
			}
			started = append(started, in)
		}
		if failure == nil && e.st.Endpoints[f.name] == ep {
			if !e.activateTrafficLocked(ep, nil, f.name) {
				// Shutting down: what started stays in the fleet for Run to stop.
				return
			}
		}
		for _, in := range started {
			in.ready.Store(true)
			if !slices.Contains(ep.Instances, in.id) {
				ep.Instances = append(ep.Instances, in.id)
			}
			go e.watchInstance(f, in)
		}
		if cur := e.st.Endpoints[f.name]; cur != ep {
			// Deleted (or replaced) while starting: the next round stops what is left.
			e.mu.Unlock()
			f.kickNow()
			return
		}
		if failure != nil {
			e.log.Printf("endpoint %s: %v", ep.Name, failure)
			switch ep.Status {
			case statusCreating:
				ep.Status = statusFailed
				ep.FailureReason = failure.Error()
				e.setVariantStatusLocked(ep, "")
			case statusUpdating:
				// Roll back to what runs, as SageMaker does when an update fails.
				ep.Desired = len(ep.Instances)
				ep.Status = statusInService
				ep.FailureReason = failure.Error()
				ep.Modified = time.Now().UTC()
				e.setVariantStatusLocked(ep, "")
			case statusInService:
				// Replacing an instance failed: retry, backing off so a broken model does not spin.
				f.failures++
				wait := min(retryBase<<min(f.failures-1, 10), retryMax)
				f.retryAt = time.Now().Add(wait)
				ep.FailureReason = fmt.Sprintf("replacing an instance failed %d time(s) in a row, next attempt in %s: %v", f.failures, wait, failure)
			}
			e.saveLocked()
			e.mu.Unlock()
			return
		}
		f.failures, f.retryAt = 0, time.Time{}
		e.settleLocked(ep, f)
		// Read under the lock: UpdateEndpointWeightsAndCapacities may change the count as soon as it is released.
		more := len(live)+len(starting) < ep.Desired
		e.mu.Unlock()
		if more {
			// More to start than one batch: the next step starts them.
			f.kickNow()
		}
	default:
		e.settleLocked(ep, f)
		e.mu.Unlock()
	}
}

// blueGreen performs the endpoint's pending UpdateEndpoint as SageMaker's all-at-once blue/green deployment:
// the green instances (the new config's model) start beside the blue ones, which keep serving; only when every
// green instance answers /ping 200 does traffic move to them, after which the blue instances leave the router,
// drain and stop, and the endpoint returns to InService. When a green instance fails, the green fleet is
// stopped and the endpoint rolls back: InService on the old config, with FailureReason saying why.
// Called with e.mu held; returns with it released.
func (e *Emulator) blueGreen(f *fleet, ep *endpointRec) {
	pd := ep.Pending
	v, model := e.pendingLocked(pd)
	timeout := variantStartupTimeout(v)
	var green []*instance
	if model != nil {
		for range pd.Desired {
			e.st.NextInstance++
			in := newInstance(ep, fmt.Sprintf("i-%05d", e.st.NextInstance), v.InstanceType)
			green = append(green, in)
			f.instances = append(f.instances, in)
		}
		e.saveLocked()
	}
	e.mu.Unlock()

	var failure error
	if model == nil {
		failure = fmt.Errorf("endpoint config %s or its model no longer exists", pd.ConfigName)
	}
	for _, err := range e.startEach(green, model, timeout) {
		if err != nil && failure == nil {
			failure = err
		}
	}

	select {
	case <-e.done:
		// Shutting down: the update stays pending and resumes when the emulator starts again.
		return
	default:
	}
	e.mu.Lock()
	if cur := e.st.Endpoints[f.name]; cur != ep || ep.Pending != pd {
		// Deleted while the green fleet started: the next round stops what is left.
		e.mu.Unlock()
		f.kickNow()
		return
	}
	if failure == nil {
		if !e.activateTrafficLocked(ep, pd, f.name) {
			return
		}
		if cur := e.st.Endpoints[f.name]; cur != ep || ep.Pending != pd {
			e.mu.Unlock()
			f.kickNow()
			return
		}
	}
	isGreen := func(in *instance) bool { return slices.Contains(green, in) }
	if failure != nil {
		e.log.Printf("endpoint %s: update to %s failed, rolling back: %v", ep.Name, pd.ConfigName, failure)
		f.instances = slices.DeleteFunc(f.instances, isGreen)
		ep.Pending = nil
		ep.FailureReason = fmt.Sprintf("UpdateEndpoint to endpoint config %s failed and was rolled back to %s: %v", pd.ConfigName, ep.ConfigName, failure)
		ep.Modified = time.Now().UTC()
		e.saveLocked()
		e.mu.Unlock()
		e.stopAll(green, 0)
		e.mu.Lock()
		// Updating until the old fleet is complete again (it is, unless the emulator restarted mid-update).
		e.settleLocked(ep, f)
		e.mu.Unlock()
		f.kickNow()
		return
	}
	var blue []*instance
	for _, in := range f.instances {
		if !isGreen(in) {
			in.draining.Store(true)
			blue = append(blue, in)
		}
	}
	ep.Instances = ep.Instances[:0]
	for _, in := range green {
		in.ready.Store(true)
		ep.Instances = append(ep.Instances, in.id)
		go e.watchInstance(f, in)
	}
	ep.ConfigName, ep.ModelName, ep.InstanceType = pd.ConfigName, v.ModelName, v.InstanceType
	ep.Model, ep.StartupTimeoutS = model, v.StartupTimeoutS
	if v.InitialVariantWeight > 0 {
		ep.Weight = v.InitialVariantWeight
	}
	ep.Desired, ep.Pending, ep.Modified = pd.Desired, nil, time.Now().UTC()
	e.saveLocked()
	e.mu.Unlock()

	e.mu.Lock()
	e.terminatingLocked(ep, len(blue))
	e.mu.Unlock()
	e.stopAll(blue, drainTimeout)
	e.terminate(blue, f.name)
	e.mu.Lock()
	f.instances = slices.DeleteFunc(f.instances, func(in *instance) bool { return slices.Contains(blue, in) })
	e.settleLocked(ep, f)
	e.mu.Unlock()
}

// settleLocked moves a Creating or Updating endpoint to InService once every wanted instance is ready.
func (e *Emulator) settleLocked(ep *endpointRec, f *fleet) {
	if ep.Status != statusCreating && ep.Status != statusUpdating {
		return
	}
	ready := 0
	for _, in := range f.instances {
		if in.ready.Load() && !in.draining.Load() {
			ready++
		}
	}
	if ready == ep.Desired && len(f.instances) == ep.Desired {
		if ep.Status != statusInService {
			e.log.Printf("endpoint %s is InService with %d instance(s)", ep.Name, ready)
		}
		ep.Status = statusInService
		ep.Modified = time.Now().UTC()
		// The instances associated with the variant are exactly the serving ones now (a record written
		// while an emulator stopped mid-update may name instances that are gone).
		ep.Instances = ep.Instances[:0]
		for _, in := range f.instances {
			ep.Instances = append(ep.Instances, in.id)
		}
		e.setVariantStatusLocked(ep, "")
		e.saveLocked()
	}
}

// terminatingLocked shows n instances terminating on an Updating endpoint: VariantStatus Updating with the
// StatusMessage "Terminating n instance(s).". e.mu must be held.
func (e *Emulator) terminatingLocked(ep *endpointRec, n int) {
	if ep.Status != statusUpdating || n == 0 {
		return
	}
	e.setVariantStatusLocked(ep, variantUpdating)
	ep.VariantStatus.Message = fmt.Sprintf("Terminating %d instance(s).", n)
	e.saveLocked()
}

// terminate waits out the profile's PhaseTerminate phases for instances that have stopped, once for the batch
// (they terminate together); they stay in CurrentInstanceCount until it returns. It returns early when the
// emulator stops.
func (e *Emulator) terminate(list []*instance, fleetName string) {
	if len(list) == 0 || e.opts.Profile.Total(PhaseTerminate) == 0 {
		return
	}
	e.runPhases(PhaseTerminate, fmt.Sprintf("endpoint %s: %d instance(s)", fleetName, len(list)), nil)
}

// activateTrafficLocked turns traffic on for a batch of new instances that passed their health checks: the
// variant (and, for an UpdateEndpoint, the pending variant pd) shows ActivatingTraffic while the profile's
// PhaseTraffic phases run, then the caller routes requests to them. An InService endpoint replacing an
// instance shows no stage, as on SageMaker. Called with e.mu held; returns with it held, or false with it
// released when the emulator stops meanwhile.
func (e *Emulator) activateTrafficLocked(ep *endpointRec, pd *pendingDeployment, fleetName string) bool {
	if ep.Status == statusCreating || ep.Status == statusUpdating {
		e.setVariantStatusLocked(ep, variantActivatingTraffic)
		if pd != nil {
			pd.VariantStatus = &variantStatus{Status: variantActivatingTraffic, Start: ep.VariantStatus.Start}
		}
		e.saveLocked()
	}
	if e.opts.Profile.Total(PhaseTraffic) == 0 {
		return true
	}
	e.mu.Unlock()
	if !e.runPhases(PhaseTraffic, "endpoint "+fleetName, nil) {
		return false
	}
	e.mu.Lock()
	return true
}

// reusableIDLocked returns an instance id the endpoint had before the emulator restarted and that no process
// runs yet, so log streams continue; "" when there is none.
func (e *Emulator) reusableIDLocked(ep *endpointRec, f *fleet) string {
	for _, id := range ep.Instances {
		if !slices.ContainsFunc(f.instances, func(in *instance) bool { return in.id == id }) {
			return id
		}
	}
	return ""
}

// variantStartupTimeout is how long an instance of the variant may take to answer /ping: its
// ContainerStartupHealthCheckTimeoutInSeconds, 10 minutes when it gives none.
func variantStartupTimeout(v variantRec) time.Duration {
	if v.StartupTimeoutS > 0 {
		return time.Duration(v.StartupTimeoutS) * time.Second
	}
	return 10 * time.Minute
}

// deploymentLocked returns the model and startup timeout the endpoint's instances start from: the definition
// captured in the endpoint's record when it was created or last updated, so that deleting the model or the
// endpoint config does not stop the endpoint from replacing instances, as on SageMaker. A record written by an
// older emulator has no copy: it is captured now from the model if that still exists. e.mu must be held.
func (e *Emulator) deploymentLocked(ep *endpointRec) (*modelRec, time.Duration, error) {
	if ep.Model == nil {
		m := e.st.Models[ep.ModelName]
		if m == nil {
			return nil, 0, fmt.Errorf("the endpoint's model %s was deleted and the endpoint record holds no copy of it (written by an older emulator): create the endpoint again", ep.ModelName)
		}
		cp := *m
		ep.Model = &cp
		if c := e.st.EndpointConfigs[ep.ConfigName]; c != nil && len(c.Variants) > 0 {
			ep.StartupTimeoutS = c.Variants[0].StartupTimeoutS
		}
		e.saveLocked()
	}
	return ep.Model, variantStartupTimeout(variantRec{StartupTimeoutS: ep.StartupTimeoutS}), nil
}

// pendingLocked returns the variant and model a pending UpdateEndpoint deploys: the copies captured when the
// update was asked for, or (for a record written by an older emulator) the config and model if they still
// exist. The model is nil when neither is there. e.mu must be held.
func (e *Emulator) pendingLocked(pd *pendingDeployment) (variantRec, *modelRec) {
	if pd.Variant != nil && pd.Model != nil {
		return *pd.Variant, pd.Model
	}
	c := e.st.EndpointConfigs[pd.ConfigName]
	if c == nil || len(c.Variants) == 0 {
		return variantRec{}, nil
	}
	v := c.Variants[0]
	m := e.st.Models[v.ModelName]
	if m == nil {
		return v, nil
	}
	cp := *m
	return v, &cp
}

// newInstance is a not yet started instance of the endpoint of the instance type, logging to the stream
// <variant>/<id>.
func newInstance(ep *endpointRec, id, instanceType string) *instance {
	return &instance{id: id, endpoint: ep.Name, stream: ep.Variant + "/" + id, instanceType: instanceType, exited: make(chan struct{})}
}

// startEach starts the instances in parallel and returns, in the same order, each one's startInstance error.
func (e *Emulator) startEach(list []*instance, model *modelRec, timeout time.Duration) []error {
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, in := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.startInstance(in, model, timeout)
		}()
	}
	wg.Wait()
	return errs
}

// drainTimeout bounds how long a scaled-in instance may finish its outstanding requests before it is stopped.
const drainTimeout = 60 * time.Second

// startInstance runs the container binary for one instance and waits until its /ping answers 200.
func (e *Emulator) startInstance(in *instance, model *modelRec, timeout time.Duration) error {
	if model == nil {
		return fmt.Errorf("instance %s: the endpoint's model no longer exists", in.id)
	}
	if e.opts.ContainerBin == "" {
		return fmt.Errorf("instance %s: the emulator has no container binary configured (set SPEECH_CONTAINER_BIN or build bin/speech-container)", in.id)
	}
	// The platform's phases before the container runs, as long as the instance type's profile makes them: its
	// log stream stays empty meanwhile.
	who := fmt.Sprintf("instance %s of %s", in.id, in.endpoint)
	tp := e.instanceTypeProfile(in.instanceType)
	if !e.runScaledPhases(PhaseLaunch, who, nil, tp) {
		close(in.exited)
		return errors.New("emulator stopping")
	}
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("instance %s: %w", in.id, err)
	}
	in.port.Store(int32(port))
	cmd := exec.Command(e.opts.ContainerBin, "serve")
	cmd.Env = os.Environ()
	for k, v := range model.Container.Environment {
		if k == envCalibrationSegment && tp.ServiceFactor != 1 {
			// The twin's compute on this instance type: only the process gets the scaled value; the model (as
			// DescribeModel shows it) keeps the one it was created with.
			if scaled, ok := scaleMillis(v, tp.ServiceFactor); ok {
				e.log.Printf("%s: %s=%s for instance type %s (the model's %s × service-time factor %g)", who, k, scaled, in.instanceType, v, tp.ServiceFactor)
				v = scaled
			} else {
				e.log.Printf("%s: %s=%q is not a whole number of milliseconds the instance type %s's factor %g can scale; passed as given", who, k, v, in.instanceType, tp.ServiceFactor)
			}
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// The instance listens on loopback only: its /invocations takes no key, so another host must not reach it past
	// the emulator's access key (docs/design.md, "The local emulator": instances on loopback ports). Appended
	// after the model's environment, so a model that sets SAGEMAKER_BIND_TO_ADDRESS cannot widen it.
	cmd.Env = append(cmd.Env, "SAGEMAKER_BIND_TO_ADDRESS=127.0.0.1", "SAGEMAKER_BIND_TO_PORT="+strconv.Itoa(port), "INSTANCE_ID="+in.id)
	w := &lineWriter{emit: func(line string) { e.logs.append(logGroup(in.endpoint), in.stream, time.Now(), line) }}
	cmd.Stdout = w
	cmd.Stderr = w
	// Its own process group, so stopping reaches whatever it forks; killed with the emulator if that dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	in.cmd = cmd
	if err := cmd.Start(); err != nil {
		close(in.exited)
		return fmt.Errorf("instance %s: start %s: %w", in.id, e.opts.ContainerBin, err)
	}
	go func() {
		cmd.Wait()
		w.flush()
		close(in.exited)
	}()
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-in.exited:
			return fmt.Errorf("instance %s: the container exited before /ping answered 200 (%v); see log stream %s", in.id, cmd.ProcessState, in.stream)
		case <-e.done:
			return errors.New("emulator stopping")
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/ping", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				// The platform's health check of the ready container.
				if !e.runPhases(PhaseHealth, who, in.exited) {
					select {
					case <-in.exited:
						return fmt.Errorf("instance %s: the container exited after /ping answered 200, before SageMaker's health check passed (%v); see log stream %s", in.id, cmd.ProcessState, in.stream)
					default:
						return errors.New("emulator stopping")
					}
				}
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("instance %s: /ping did not answer 200 within the startup health check timeout %s", in.id, timeout)
		}
	}
}

// watchInstance health-checks a serving instance until it stops, and replaces it, as SageMaker replaces an
// unhealthy instance, when its process exits unexpectedly or it fails unhealthyThreshold /ping checks in a row
// (a hung process, e.g. one stopped with SIGSTOP, answers nothing). A failing instance gets no new requests
// from its first failed check on; a replaced one is killed with SIGKILL, which a stopped process cannot ignore.
func (e *Emulator) watchInstance(f *fleet, in *instance) {
	interval := e.healthInterval()
	client := &http.Client{Timeout: min(healthCheckTimeout, interval)}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	fails := 0
	for {
		select {
		case <-e.done:
			return
		case <-in.exited:
			if in.stopping.Load() {
				return
			}
			e.log.Printf("instance %s of %s exited unexpectedly (%v); replacing it", in.id, f.name, in.cmd.ProcessState)
			e.replace(f, in)
			return
		case <-tick.C:
		}
		if in.stopping.Load() || in.draining.Load() {
			continue
		}
		err := ping(client, in)
		if err == nil {
			if fails > 0 {
				e.log.Printf("instance %s of %s passes its health check again", in.id, f.name)
			}
			fails = 0
			in.unhealthy.Store(false)
			continue
		}
		fails++
		in.unhealthy.Store(true)
		if fails < unhealthyThreshold {
			e.log.Printf("instance %s of %s failed health check %d of %d, routing no new requests to it: %v", in.id, f.name, fails, unhealthyThreshold, err)
			continue
		}
		e.log.Printf("instance %s of %s failed %d health checks in a row (%v); killing and replacing it", in.id, f.name, fails, err)
		in.ready.Store(false)
		if in.cmd != nil && in.cmd.Process != nil {
			syscall.Kill(-in.cmd.Process.Pid, syscall.SIGKILL)
		}
		select {
		case <-in.exited:
		case <-time.After(killWait):
			e.log.Printf("instance %s of %s: its process did not exit %s after SIGKILL; replacing it anyway", in.id, f.name, killWait)
		case <-e.done:
			return
		}
		e.replace(f, in)
		return
	}
}

// ping checks the instance's /ping once: nil when it answers 200.
func ping(client *http.Client, in *instance) error {
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/ping", in.port.Load()))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/ping answered %d", resp.StatusCode)
	}
	return nil
}

// replace takes a failed instance out of its fleet and the endpoint's record and makes the fleet start another.
func (e *Emulator) replace(f *fleet, in *instance) {
	e.mu.Lock()
	f.instances = slices.DeleteFunc(f.instances, func(x *instance) bool { return x == in })
	if ep := e.st.Endpoints[f.name]; ep != nil {
		ep.Instances = slices.DeleteFunc(ep.Instances, func(id string) bool { return id == in.id })
		e.saveLocked()
	}
	e.mu.Unlock()
	f.kickNow()
}

// stopAll drains the given instances (waits up to drain for their outstanding requests, less when the emulator
// is shutting down) and stops them.
func (e *Emulator) stopAll(list []*instance, drain time.Duration) {
	var wg sync.WaitGroup
	for _, in := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.draining.Store(true)
			deadline := time.Now().Add(drain)
		draining:
			for in.outstanding.Load() > 0 && time.Now().Before(deadline) {
				select {
				case <-e.done:
					break draining
				case <-time.After(50 * time.Millisecond):
				}
			}
			e.stopInstance(in)
		}()
	}
	wg.Wait()
}

// stopInstance sends SIGTERM to the instance's process group and SIGKILL if it has not exited after 5 s.
func (e *Emulator) stopInstance(in *instance) {
	in.stopping.Store(true)
	in.ready.Store(false)
	if in.cmd == nil || in.cmd.Process == nil {
		return
	}
	syscall.Kill(-in.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-in.exited:
	case <-time.After(5 * time.Second):
		syscall.Kill(-in.cmd.Process.Pid, syscall.SIGKILL)
		<-in.exited
	}
}

// stopFleets stops every instance of every endpoint; used on shutdown.
func (e *Emulator) stopFleets() {
	e.mu.Lock()
	var all []*instance
	for _, f := range e.fleets {
		all = append(all, f.instances...)
	}
	e.mu.Unlock()
	e.stopAll(all, 0)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// lineWriter splits a process's output into lines for the log store.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(string(bytes.TrimRight(w.buf[:i], "\r")))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
}
