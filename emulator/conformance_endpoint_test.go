package emulator_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// Conformance of endpoint updates and of the timing profile: each case cites the AWS
// documentation sentence or API-reference field it checks.

// epObservation is one DescribeEndpoint answer as the tests compare them.
type epObservation struct {
	at       time.Time
	status   smtypes.EndpointStatus
	variant  []smtypes.ProductionVariantStatus
	current  int32
	desired  int32
	vsString string
}

// epObserve describes the endpoint once.
func epObserve(ctx context.Context, t *testing.T, c emulatortest.Clients, name string) epObservation {
	t.Helper()
	d := describe(ctx, t, c, name)
	if len(d.ProductionVariants) != 1 {
		t.Fatalf("DescribeEndpoint: %d production variants, want 1", len(d.ProductionVariants))
	}
	v := d.ProductionVariants[0]
	o := epObservation{at: time.Now(), status: d.EndpointStatus, variant: v.VariantStatus,
		current: aws.ToInt32(v.CurrentInstanceCount), desired: aws.ToInt32(v.DesiredInstanceCount)}
	var names []string
	for _, s := range v.VariantStatus {
		names = append(names, string(s.Status))
	}
	o.vsString = fmt.Sprint(names)
	return o
}

// epWatch polls DescribeEndpoint every 20 ms until the endpoint is InService (or the timeout passes, which
// fails the test) and returns every answer in order.
func epWatch(ctx context.Context, t *testing.T, c emulatortest.Clients, name string, timeout time.Duration) []epObservation {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var obs []epObservation
	for {
		o := epObserve(ctx, t, c, name)
		obs = append(obs, o)
		if o.status == smtypes.EndpointStatusInService {
			return obs
		}
		if o.status == smtypes.EndpointStatusFailed || time.Now().After(deadline) {
			t.Fatalf("endpoint %s: %s after %s (last VariantStatus %s)", name, o.status, timeout, o.vsString)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// variantStages is the sequence of distinct VariantStatus entries the observations saw, each with the
// StartTime it carried and the time it was first seen.
type variantStage struct {
	status smtypes.VariantStatus
	start  time.Time
	seen   time.Time
}

func variantStages(t *testing.T, obs []epObservation) []variantStage {
	t.Helper()
	var out []variantStage
	for _, o := range obs {
		if len(o.variant) > 1 {
			t.Fatalf("VariantStatus %s: want at most one entry for a single-variant endpoint", o.vsString)
		}
		for _, s := range o.variant {
			if s.StartTime == nil {
				t.Fatalf("VariantStatus %s has no StartTime", s.Status)
			}
			if n := len(out); n == 0 || out[n-1].status != s.Status {
				out = append(out, variantStage{status: s.Status, start: *s.StartTime, seen: o.at})
			}
		}
	}
	return out
}

func stageNames(st []variantStage) []smtypes.VariantStatus {
	var out []smtypes.VariantStatus
	for _, s := range st {
		out = append(out, s.status)
	}
	return out
}

// firstEventTime is the timestamp of the first event of the log stream.
func firstEventTime(ctx context.Context, t *testing.T, c emulatortest.Clients, endpoint, stream string) time.Time {
	t.Helper()
	out, err := c.Logs.GetLogEvents(ctx, &cloudwatchlogs.GetLogEventsInput{
		LogGroupName: aws.String(emulator.LogGroup(endpoint)), LogStreamName: aws.String(stream),
		StartFromHead: aws.Bool(true), Limit: aws.Int32(1),
	})
	if err != nil || len(out.Events) == 0 {
		t.Fatalf("GetLogEvents %s: %+v, %v; want its first event", stream, out, err)
	}
	return time.UnixMilli(aws.ToInt64(out.Events[0].Timestamp))
}

// setCount calls UpdateEndpointWeightsAndCapacities with the instance count.
func setCount(ctx context.Context, c emulatortest.Clients, name string, n int32) error {
	_, err := c.SageMaker.UpdateEndpointWeightsAndCapacities(ctx, &sagemaker.UpdateEndpointWeightsAndCapacitiesInput{
		EndpointName:                aws.String(name),
		DesiredWeightsAndCapacities: []smtypes.DesiredWeightAndCapacity{{VariantName: aws.String("AllTraffic"), DesiredInstanceCount: aws.Int32(n)}},
	})
	return err
}

// TestConformanceEndpointUpdates checks the instance counts and validation of endpoint updates against the
// SageMaker API reference.
func TestConformanceEndpointUpdates(t *testing.T) {
	r := emulatortest.Start(t, emulatortest.Container(t))
	c := r.Clients
	ctx := ctxFor(t, 4*time.Minute)
	const name = "speech-conf-updates"
	// The calibration engine holds each request for CALIBRATION_SEGMENT_MS per segment on one synthesis slot:
	// requests in flight keep a scaled-in instance draining long enough to be seen.
	emulatortest.Endpoint(t, r, name, emulatortest.InService(), emulatortest.Env(map[string]string{
		"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "1500",
	}))

	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{
			// API_ProductionVariant, InitialInstanceCount: "Number of instances to launch initially." The
			// service model (botocore sagemaker InitialTaskCount) gives it "min": 1.
			name: "endpoint config with InitialInstanceCount 0 is refused",
			run: func(t *testing.T) {
				emulatortest.Model(t, r, name+"-zero")
				_, err := c.SageMaker.CreateEndpointConfig(ctx, &sagemaker.CreateEndpointConfigInput{
					EndpointConfigName: aws.String(name + "-zero"),
					ProductionVariants: []smtypes.ProductionVariant{{
						VariantName: aws.String("AllTraffic"), ModelName: aws.String(name + "-zero"),
						InitialInstanceCount: aws.Int32(0), InstanceType: smtypes.ProductionVariantInstanceType("local"),
					}},
				})
				if apiCode(err) != "ValidationException" {
					t.Fatalf("CreateEndpointConfig with InitialInstanceCount 0: %v, want ValidationException", err)
				}
			},
		},
		{
			// Scale an endpoint to zero instances (SageMaker developer guide): "An endpoint can scale to and
			// from zero instances only if it hosts inference components." The emulator's endpoints host none.
			name: "DesiredInstanceCount 0 is refused and changes nothing",
			run: func(t *testing.T) {
				err := setCount(ctx, c, name, 0)
				if apiCode(err) != "ValidationException" {
					t.Fatalf("UpdateEndpointWeightsAndCapacities with DesiredInstanceCount 0: %v, want ValidationException", err)
				}
				o := epObserve(ctx, t, c, name)
				if o.status != smtypes.EndpointStatusInService || o.desired != 1 || o.current != 1 || len(o.variant) != 0 {
					t.Errorf("after the refused update: %s, desired %d, current %d, VariantStatus %s; want InService, 1, 1, none", o.status, o.desired, o.current, o.vsString)
				}
				if ids := r.InstanceIDs(name); len(ids) != 1 {
					t.Errorf("serving instances %v, want the one that served before", ids)
				}
			},
		},
		{
			// API_ProductionVariantSummary: "If you sent a request to the UpdateEndpointWeightsAndCapacities
			// API and the endpoint status is Updating, you get different desired and current values."
			// CurrentInstanceCount: "The number of instances associated with the variant." A scaled-in
			// instance stays associated while it drains, until it is gone.
			name: "scale-in 4 to 1 counts draining instances until they are gone",
			run: func(t *testing.T) {
				if err := setCount(ctx, c, name, 4); err != nil {
					t.Fatalf("UpdateEndpointWeightsAndCapacities to 4: %v", err)
				}
				up := epWatch(ctx, t, c, name, 90*time.Second)
				if last := up[len(up)-1]; last.current != 4 || last.desired != 4 {
					t.Fatalf("after scaling out: current %d, desired %d; want 4 and 4", last.current, last.desired)
				}
				// Two requests in flight per instance (least outstanding requests), each at least 1.5 s.
				stop := make(chan struct{})
				wait := load(ctx, r, name, 8, stop)
				time.Sleep(time.Second)
				if err := setCount(ctx, c, name, 1); err != nil {
					close(stop)
					wait()
					t.Fatalf("UpdateEndpointWeightsAndCapacities to 1: %v", err)
				}
				close(stop)
				down := epWatch(ctx, t, c, name, 90*time.Second)
				if ok, failed, first := wait(); failed > 0 || ok == 0 {
					t.Errorf("during the scale-in: %d streams ok, %d failed (first: %v)", ok, failed, first)
				}
				sawDraining := false
				for _, o := range down {
					if o.status != smtypes.EndpointStatusUpdating {
						continue
					}
					if o.desired != 1 {
						t.Errorf("while Updating: DesiredInstanceCount %d, want 1", o.desired)
					}
					if o.current < 2 {
						t.Fatalf("while Updating: CurrentInstanceCount %d while the scaled-in instances still drain; want them counted until they are gone", o.current)
					}
					sawDraining = sawDraining || o.current == 4
				}
				if !sawDraining {
					t.Errorf("no DescribeEndpoint saw the 4 instances draining while Updating (%d observations)", len(down))
				}
				if last := down[len(down)-1]; last.current != 1 || last.desired != 1 || len(last.variant) != 0 {
					t.Errorf("after the scale-in: current %d, desired %d, VariantStatus %s; want 1, 1, none", last.current, last.desired, last.vsString)
				}
				if got := stageNames(variantStages(t, down)); !slices.Equal(got, []smtypes.VariantStatus{smtypes.VariantStatusUpdating}) {
					t.Errorf("VariantStatus during the scale-in went %v, want [Updating]", got)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, tc.run)
	}
}

// TestConformanceTimingProfile runs the built-in Kokoro/ml.g5.xlarge profile a hundred times faster: the new
// instance's log stream gets its first event only after the profile's launch phases, and VariantStatus moves
// through AWS's values in order, each with a StartTime.
func TestConformanceTimingProfile(t *testing.T) {
	profile, err := emulator.BuiltinProfile(emulator.ProfileKokoroG5)
	if err != nil {
		t.Fatal(err)
	}
	const scale = 100
	launch := profile.Total(emulator.PhaseLaunch) / scale
	health := profile.Total(emulator.PhaseHealth) / scale
	traffic := profile.Total(emulator.PhaseTraffic) / scale
	if launch != 1845*time.Millisecond || health != 207*time.Millisecond || traffic != 474*time.Millisecond {
		t.Fatalf("profile %s at scale %d: launch %s, health %s, traffic %s; want 1.845s, 207ms, 474ms", profile.Name, scale, launch, health, traffic)
	}
	r := emulatortest.Start(t, emulatortest.Container(t), func(o *emulator.Options) { o.Profile, o.TimeScale = profile, scale })
	parent := t
	c := r.Clients
	ctx := ctxFor(t, 3*time.Minute)
	const name = "speech-conf-profile"
	// The container's own start (process, espeak load, warm-up) on a busy 2-core machine, on top of the profile.
	const slack = 5 * time.Second
	// Log event timestamps are whole milliseconds.
	const tick = time.Millisecond

	// checkStart verifies one instance start begun at t0: the stream's first event after the launch phases,
	// then stage want[0] (Creating or Updating), then ActivatingTraffic after the health phases, then InService
	// with no stage, CurrentInstanceCount reaching `count` only then.
	checkStart := func(t *testing.T, t0 time.Time, obs []epObservation, stream string, first smtypes.VariantStatus, count int32) {
		t.Helper()
		ev := firstEventTime(ctx, t, c, name, stream)
		if d := ev.Sub(t0); d < launch-tick || d > launch+slack {
			t.Errorf("first event of %s %s after the request; want the profile's launch phases, %s (up to %s more)", stream, d, launch, slack)
		}
		st := variantStages(t, obs)
		if got, want := stageNames(st), []smtypes.VariantStatus{first, smtypes.VariantStatusActivatingTraffic}; !slices.Equal(got, want) {
			t.Fatalf("VariantStatus went %v, want %v", got, want)
		}
		if d := st[0].start.Sub(t0); d < -time.Second || d > time.Second {
			t.Errorf("%s StartTime %s after the request, want about 0", first, d)
		}
		if d := st[1].start.Sub(ev); d < health-tick {
			t.Errorf("ActivatingTraffic started %s after the first log event, want at least the health phases, %s", d, health)
		}
		last := obs[len(obs)-1]
		if d := last.at.Sub(st[1].start); d < traffic {
			t.Errorf("InService %s after ActivatingTraffic started, want at least the traffic phases, %s", d, traffic)
		}
		if last.current != count || len(last.variant) != 0 {
			t.Errorf("InService with CurrentInstanceCount %d and VariantStatus %s; want %d and none", last.current, last.vsString, count)
		}
		for _, o := range obs[:len(obs)-1] {
			if o.current >= count {
				t.Errorf("%s (VariantStatus %s) already counts %d instances; the new one serves only once InService", o.status, o.vsString, o.current)
				break
			}
		}
	}

	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{
			// API_ProductionVariantStatus, Status: "Creating: Creating inference resources for the production
			// variant." "ActivatingTraffic: Turning on traffic for the production variant." StartTime: "The
			// start time of the current status change."
			name: "creation: Creating, then ActivatingTraffic, then InService",
			run: func(t *testing.T) {
				t0 := time.Now()
				// The endpoint outlives this case: the next one scales it out.
				emulatortest.Endpoint(parent, r, name)
				obs := epWatch(ctx, t, c, name, 90*time.Second)
				streams := logStreams(ctx, t, c, name)
				if len(streams) != 1 {
					t.Fatalf("log streams %v, want the one instance's", streams)
				}
				checkStart(t, t0, obs, streams[0], smtypes.VariantStatusCreating, 1)
			},
		},
		{
			// API_ProductionVariantStatus, Status: "Updating: Updating capacity for the production variant."
			// "ActivatingTraffic: Turning on traffic for the production variant." API_UpdateEndpointWeightsAndCapacities:
			// "When it receives the request, SageMaker sets the endpoint status to Updating. After updating
			// the endpoint, it sets the status to InService."
			name: "scale-out: Updating, then ActivatingTraffic, then InService",
			run: func(t *testing.T) {
				before := logStreams(ctx, t, c, name)
				t0 := time.Now()
				if err := setCount(ctx, c, name, 2); err != nil {
					t.Fatalf("UpdateEndpointWeightsAndCapacities to 2: %v", err)
				}
				obs := epWatch(ctx, t, c, name, 90*time.Second)
				var added []string
				for _, s := range logStreams(ctx, t, c, name) {
					if !slices.Contains(before, s) {
						added = append(added, s)
					}
				}
				if len(added) != 1 {
					t.Fatalf("new log streams %v, want the new instance's", added)
				}
				if obs[0].status != smtypes.EndpointStatusUpdating {
					t.Errorf("right after the request: %s, want Updating", obs[0].status)
				}
				checkStart(t, t0, obs, added[0], smtypes.VariantStatusUpdating, 2)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, tc.run)
	}
}

// TestTimingProfileParsing reads the profile and time-scale settings the emulator takes from its environment.
func TestTimingProfileParsing(t *testing.T) {
	var sum float64
	for _, s := range emulator.KokoroG5ProofOfValue {
		sum += s.Seconds
	}
	if len(emulator.KokoroG5ProofOfValue) != 8 || fmt.Sprintf("%.1f", sum) != "290.1" {
		t.Errorf("the proof-of-value stages: %d summing to %.1f s, want 8 summing to 290.1 s", len(emulator.KokoroG5ProofOfValue), sum)
	}
	cases := []struct {
		in      string
		wantErr bool
		phases  int
		launch  time.Duration
		health  time.Duration
		traffic time.Duration
	}{
		{in: "", phases: 0},
		{in: "none", phases: 0},
		{in: emulator.ProfileKokoroG5, phases: 4, launch: 184500 * time.Millisecond, health: 20700 * time.Millisecond, traffic: 47400 * time.Millisecond},
		{in: "provisioning=180.8,health_check=500ms@health,activating=2s@traffic", phases: 3, launch: 180800 * time.Millisecond, health: 500 * time.Millisecond, traffic: 2 * time.Second},
		{in: "no-such-profile", wantErr: true},
		{in: "provisioning=-1", wantErr: true},
		{in: "provisioning=1@later", wantErr: true},
		{in: "=1", wantErr: true},
		{in: "provisioning=soon", wantErr: true},
	}
	for _, tc := range cases {
		p, err := emulator.ParseProfile(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseProfile(%q) = %+v, want an error", tc.in, p)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseProfile(%q): %v", tc.in, err)
			continue
		}
		n := 0
		if p != nil {
			n = len(p.Phases)
		}
		if n != tc.phases || p.Total(emulator.PhaseLaunch) != tc.launch || p.Total(emulator.PhaseHealth) != tc.health || p.Total(emulator.PhaseTraffic) != tc.traffic {
			t.Errorf("ParseProfile(%q): %d phases, launch %s, health %s, traffic %s; want %d, %s, %s, %s", tc.in, n,
				p.Total(emulator.PhaseLaunch), p.Total(emulator.PhaseHealth), p.Total(emulator.PhaseTraffic), tc.phases, tc.launch, tc.health, tc.traffic)
		}
	}
	for in, want := range map[string]float64{"": 1, "100": 100, "0.5": 0.5} {
		if got, err := emulator.ParseTimeScale(in); err != nil || got != want {
			t.Errorf("ParseTimeScale(%q) = %g, %v; want %g", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-2", "NaN", "Inf", "fast"} {
		if got, err := emulator.ParseTimeScale(in); err == nil {
			t.Errorf("ParseTimeScale(%q) = %g, want an error", in, got)
		}
	}
	// An unusable environment setting stops the emulator from opening, naming the variable.
	t.Setenv(emulator.EnvProfile, "no-such-profile")
	if e, err := emulator.Open(emulator.Options{StateDir: t.TempDir(), Addr: "127.0.0.1:0"}); err == nil {
		e.CloseUnrun()
		t.Errorf("Open with %s=no-such-profile succeeded, want an error", emulator.EnvProfile)
	}
}
