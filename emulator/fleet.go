package emulator

import (
	"bytes"
	"errors"
	"fmt"
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
}

// instance is one container process serving on its own loopback port.
type instance struct {
	id       string
	endpoint string
	stream   string
	port     int
	cmd      *exec.Cmd
	exited   chan struct{}
	ready    atomic.Bool
	draining atomic.Bool
	stopping atomic.Bool
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
	var live []*instance
	for _, in := range f.instances {
		if !in.draining.Load() {
			live = append(live, in)
		}
	}
	switch {
	case len(live) > ep.Desired:
		// Scale in: the newest instances leave the router first, drain, then stop.
		victims := live[ep.Desired:]
		for _, in := range victims {
			in.draining.Store(true)
			ep.Instances = slices.DeleteFunc(ep.Instances, func(id string) bool { return id == in.id })
		}
		e.saveLocked()
		e.mu.Unlock()
		e.stopAll(victims, drainTimeout)
		e.mu.Lock()
		f.instances = slices.DeleteFunc(f.instances, func(in *instance) bool { return slices.Contains(victims, in) })
		e.settleLocked(ep, f)
		e.mu.Unlock()
	case len(live) < ep.Desired:
		model := e.st.Models[ep.ModelName]
		timeout := startupTimeout(e.st.EndpointConfigs[ep.ConfigName])
		var starting []*instance
		for i := len(live); i < ep.Desired; i++ {
			id := e.reusableIDLocked(ep, f)
			if id == "" {
				e.st.NextInstance++
				id = fmt.Sprintf("i-%05d", e.st.NextInstance)
			}
			in := newInstance(ep, id)
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
			case statusUpdating:
				// Roll back to what runs, as SageMaker does when an update fails.
				ep.Desired = len(ep.Instances)
				ep.Status = statusInService
				ep.FailureReason = failure.Error()
				ep.Modified = time.Now().UTC()
			}
			e.saveLocked()
			e.mu.Unlock()
			return
		}
		e.settleLocked(ep, f)
		e.mu.Unlock()
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
	c := e.st.EndpointConfigs[pd.ConfigName]
	var v variantRec
	var model *modelRec
	if c != nil && len(c.Variants) > 0 {
		v = c.Variants[0]
		model = e.st.Models[v.ModelName]
	}
	timeout := startupTimeout(c)
	var green []*instance
	if model != nil {
		for range pd.Desired {
			e.st.NextInstance++
			in := newInstance(ep, fmt.Sprintf("i-%05d", e.st.NextInstance))
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
	if v.InitialVariantWeight > 0 {
		ep.Weight = v.InitialVariantWeight
	}
	ep.Desired, ep.Pending, ep.Modified = pd.Desired, nil, time.Now().UTC()
	e.saveLocked()
	e.mu.Unlock()

	e.stopAll(blue, drainTimeout)
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
		ep.Status = statusInService
		ep.Modified = time.Now().UTC()
		e.saveLocked()
	}
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

// startupTimeout is how long an instance of the endpoint config's variant may take to answer /ping: its
// ContainerStartupHealthCheckTimeoutInSeconds, 10 minutes when it gives none (or the config is gone).
func startupTimeout(c *endpointConfigRec) time.Duration {
	if c != nil && len(c.Variants) > 0 && c.Variants[0].StartupTimeoutS > 0 {
		return time.Duration(c.Variants[0].StartupTimeoutS) * time.Second
	}
	return 10 * time.Minute
}

// newInstance is a not yet started instance of the endpoint, logging to the stream <variant>/<id>.
func newInstance(ep *endpointRec, id string) *instance {
	return &instance{id: id, endpoint: ep.Name, stream: ep.Variant + "/" + id, exited: make(chan struct{})}
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
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("instance %s: %w", in.id, err)
	}
	in.port = port
	cmd := exec.Command(e.opts.ContainerBin, "serve")
	cmd.Env = os.Environ()
	for k, v := range model.Container.Environment {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "SAGEMAKER_BIND_TO_PORT="+strconv.Itoa(port), "INSTANCE_ID="+in.id)
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
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("instance %s: /ping did not answer 200 within the startup health check timeout %s", in.id, timeout)
		}
	}
}

// watchInstance replaces an instance whose process exits while it should be serving, as SageMaker replaces an
// unhealthy instance.
func (e *Emulator) watchInstance(f *fleet, in *instance) {
	select {
	case <-e.done:
		return
	case <-in.exited:
	}
	if in.stopping.Load() {
		return
	}
	e.log.Printf("instance %s of %s exited unexpectedly (%v); replacing it", in.id, f.name, in.cmd.ProcessState)
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
