package emulator

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A timing profile makes the emulator's instances take as long to come up as SageMaker's do. A real
// ml.g5.xlarge instance takes minutes: capacity is provisioned, the image pulled and the model data
// downloaded before the container logs anything, and after the container answers /ping SageMaker still has to
// see it healthy and turn traffic on. The emulator's own instances start in about a second, so without a
// profile a T_total measured against it is the time of a fork/exec.
//
// A profile shapes only what AWS shows: the time before a new instance's log stream gets its first event
// (PhaseLaunch), and how long DescribeEndpoint's ProductionVariants[].VariantStatus stays Creating or Updating
// after the container is ready (PhaseHealth) and then ActivatingTraffic (PhaseTraffic), each status with its
// StartTime. The phase names appear in the emulator's own log only: AWS shows no finer detail, and neither does
// the emulator. The container's own stages (its STAGE lines) are the container's: a profile never slows them.
//
// The instance type of the endpoint's variant scales the launch phases by its instance-type profile's
// LaunchFactor (instancetypes.go); the other phases are the platform's and stay as the profile gives them.

// PhaseRole says where in an instance's start a phase of a profile runs.
type PhaseRole string

// The roles of a profile's phases, in the order they run.
const (
	// PhaseLaunch runs before the instance's container process starts (provisioning, image pull, model
	// download): the instance's log stream gets nothing meanwhile.
	PhaseLaunch PhaseRole = "launch"
	// PhaseHealth runs after the container first answers /ping 200 and before traffic is turned on: SageMaker
	// confirming the instance healthy. VariantStatus stays Creating or Updating.
	PhaseHealth PhaseRole = "health"
	// PhaseTraffic runs while VariantStatus is ActivatingTraffic, after every new instance of the batch is
	// healthy and before the router sends it requests (CurrentInstanceCount counts it from then on).
	PhaseTraffic PhaseRole = "traffic"
	// PhaseTerminate runs for each instance a scale-in (or the end of a blue/green update) removes, after it
	// left the router and drained and its process stopped, and before it leaves CurrentInstanceCount: the
	// platform terminating the instance. The endpoint stays Updating meanwhile, with VariantStatus Updating and
	// StatusMessage "Terminating N instance(s).".
	PhaseTerminate PhaseRole = "terminate"
)

var phaseRoles = []PhaseRole{PhaseLaunch, PhaseHealth, PhaseTraffic, PhaseTerminate}

// Phase is one named platform phase of an instance's start.
type Phase struct {
	// Name names the phase in the emulator's log, e.g. instance_provisioning.
	Name string
	// Duration is how long the phase takes at time scale 1.
	Duration time.Duration
	// Role says when the phase runs.
	Role PhaseRole
}

// Profile is a named list of platform phases the emulator inserts into every instance's start.
type Profile struct {
	Name   string
	Phases []Phase
}

// Total is the summed duration of the profile's phases of the role, at time scale 1.
func (p *Profile) Total(role PhaseRole) time.Duration {
	if p == nil {
		return 0
	}
	var d time.Duration
	for _, ph := range p.Phases {
		if ph.Role == role {
			d += ph.Duration
		}
	}
	return d
}

// ProofOfValueStage is one of the eight stage durations AWS's proof-of-value reported for Kokoro-82M on
// ml.g5.xlarge, with the name and role this emulator gives it. The publication names no stages: the names
// are this emulator's judgement, documented here and in the emulator's README.
type ProofOfValueStage struct {
	// Name is the stage's name here: a platform phase, or the container STAGE line the duration ends at.
	Name string
	// Seconds is the reported duration.
	Seconds float64
	// Role is the phase role when the emulator inserts the stage as a platform phase; "" when it does not.
	Role PhaseRole
	// Why says why the stage is mapped so.
	Why string
}

// KokoroG5ProofOfValue are the eight reported stages, in order. They sum to 290.1 s against a measured total
// of 260.2 s: the difference, 29.9 s, is the first stage to a tenth of a second, so the first stage most
// likely lies before the measured total starts (the scale-out alarm's detection), not inside it.
var KokoroG5ProofOfValue = []ProofOfValueStage{
	{"alarm_detection_outside_t_total", 30.0, "", "the 29.9 s by which the stages exceed the measured total: the alarm's detection before the desired count changes, so outside T_total (which starts at desired_set); the emulator's own alarms produce it"},
	{"instance_provisioning", 180.8, PhaseLaunch, "before the container logs anything: ML instance launch, image pull, model data download"},
	{"container_launch", 3.7, PhaseLaunch, "from the platform starting the container to its first log line (container_started)"},
	{"weights_verified", 0.0, "", "the container's own stage: it prints it; the profile does not slow the container"},
	{"engine_loaded", 6.5, "", "the container's own stage (Kokoro's ONNX model load)"},
	{"warmup_done", 1.0, "", "the container's own stage (one warm-up synthesis); ready follows at once"},
	{"health_check", 20.7, PhaseHealth, "from the container's ready to SageMaker seeing it healthy; VariantStatus still Updating"},
	{"activating_traffic", 47.4, PhaseTraffic, "VariantStatus ActivatingTraffic until the instance serves and the endpoint is InService"},
}

// ProfileKokoroG5 is the name of the built-in profile made from KokoroG5ProofOfValue.
const ProfileKokoroG5 = "kokoro-g5"

// BuiltinProfile returns the built-in profile of that name: ProfileKokoroG5 (the stages of
// KokoroG5ProofOfValue that have a role: 184.5 s before the container starts, 20.7 s of health check and
// 47.4 s of ActivatingTraffic).
func BuiltinProfile(name string) (*Profile, error) {
	if name != ProfileKokoroG5 {
		return nil, fmt.Errorf("unknown timing profile %q: the built-in one is %s", name, ProfileKokoroG5)
	}
	p := &Profile{Name: ProfileKokoroG5}
	for _, s := range KokoroG5ProofOfValue {
		if s.Role != "" {
			p.Phases = append(p.Phases, Phase{Name: s.Name, Duration: time.Duration(math.Round(s.Seconds * float64(time.Second))), Role: s.Role})
		}
	}
	return p, nil
}

// ParseProfile reads a profile: a built-in name, "none" or "" (no profile: nil), or a comma-separated list of
// phases `name=duration[@role]`, the duration in seconds or as a Go duration (180.8, 500ms, 3m) and the role
// launch (the default), health, traffic or terminate, e.g. "provisioning=180.8,health_check=20.7@health,activating=47.4@traffic".
func ParseProfile(s string) (*Profile, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return nil, nil
	}
	if !strings.Contains(s, "=") {
		return BuiltinProfile(s)
	}
	p := &Profile{Name: "custom"}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		name, rest, ok := strings.Cut(item, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("timing profile phase %q: want name=duration[@role]", item)
		}
		dur, role, hasRole := strings.Cut(rest, "@")
		ph := Phase{Name: name, Role: PhaseLaunch}
		if hasRole {
			ph.Role = PhaseRole(role)
			if !slices.Contains(phaseRoles, ph.Role) {
				return nil, fmt.Errorf("timing profile phase %q: unknown role %q, want one of %v", item, role, phaseRoles)
			}
		}
		d, err := parseSeconds(dur)
		if err != nil {
			return nil, fmt.Errorf("timing profile phase %q: %w", item, err)
		}
		ph.Duration = d
		p.Phases = append(p.Phases, ph)
	}
	return p, nil
}

// parseSeconds reads a non-negative duration given in seconds (180.8) or as a Go duration (500ms).
func parseSeconds(s string) (time.Duration, error) {
	var d time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || f > 24*3600 {
			return 0, fmt.Errorf("duration %q: want at most a day of seconds", s)
		}
		d = time.Duration(math.Round(f * float64(time.Second)))
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("duration %q: want seconds (180.8) or a Go duration (3m0.8s)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// Environment variables the emulator reads when its Options leave the profile unset.
const (
	// EnvProfile picks the timing profile (ParseProfile): SPEECH_EMULATOR_PROFILE=kokoro-g5.
	EnvProfile = "SPEECH_EMULATOR_PROFILE"
	// EnvTimeScale compresses it: SPEECH_EMULATOR_TIME_SCALE=10 runs it ten times faster.
	EnvTimeScale = "SPEECH_EMULATOR_TIME_SCALE"
)

// ParseTimeScale reads a time-scale factor: a finite number above 0 ("" is 1).
func ParseTimeScale(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 1, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return 0, fmt.Errorf("time scale %q: want a number above 0 (10 runs the profile ten times faster)", s)
	}
	return f, nil
}

// profileFromEnv fills the profile and the time scale the options leave unset from EnvProfile and
// EnvTimeScale.
func profileFromEnv(opts *Options) error {
	if opts.Profile == nil {
		p, err := ParseProfile(os.Getenv(EnvProfile))
		if err != nil {
			return fmt.Errorf("%s: %w", EnvProfile, err)
		}
		opts.Profile = p
	}
	if opts.TimeScale == 0 {
		f, err := ParseTimeScale(os.Getenv(EnvTimeScale))
		if err != nil {
			return fmt.Errorf("%s: %w", EnvTimeScale, err)
		}
		opts.TimeScale = f
	}
	if opts.TimeScale < 0 || math.IsNaN(opts.TimeScale) || math.IsInf(opts.TimeScale, 0) {
		return fmt.Errorf("emulator: time scale %g: want a number above 0", opts.TimeScale)
	}
	return nil
}

// runPhases waits out the profile's phases of the role for one instance (or, for PhaseTraffic, one batch),
// each divided by the time scale and logged by name in the emulator's log. It returns false when the
// emulator stops or abort is closed first.
func (e *Emulator) runPhases(role PhaseRole, who string, abort <-chan struct{}) bool {
	return e.runScaledPhases(role, who, abort, InstanceTypeProfile{LaunchFactor: 1})
}

// runScaledPhases is runPhases for an instance of the type tp: its PhaseLaunch phases last LaunchFactor
// times the profile's (the other roles are the platform's and do not depend on the type).
func (e *Emulator) runScaledPhases(role PhaseRole, who string, abort <-chan struct{}, tp InstanceTypeProfile) bool {
	p := e.opts.Profile
	if p == nil {
		return true
	}
	factor := 1.0
	if role == PhaseLaunch {
		factor = tp.LaunchFactor
	}
	for _, ph := range p.Phases {
		if ph.Role != role {
			continue
		}
		d := time.Duration(math.Round(float64(ph.Duration) * factor / e.opts.TimeScale))
		if factor != 1 {
			e.log.Printf("%s: platform phase %s (%s of profile %s × launch factor %g for instance type %s, %s at time scale %g)", who, ph.Name, ph.Duration, p.Name, factor, tp.InstanceType, d, e.opts.TimeScale)
		} else {
			e.log.Printf("%s: platform phase %s (%s of profile %s, %s at time scale %g)", who, ph.Name, ph.Duration, p.Name, d, e.opts.TimeScale)
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-e.done:
			t.Stop()
			return false
		case <-abort:
			t.Stop()
			return false
		}
	}
	return true
}
