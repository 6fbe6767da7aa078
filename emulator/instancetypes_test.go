package emulator_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/smithy-go"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// syncBuffer collects the emulator's log for a test to read while the emulator writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logTo makes the emulator write its log to b (and, with go test -v, to stderr too).
func logTo(b *syncBuffer) emulatortest.Option {
	return func(o *emulator.Options) {
		var w io.Writer = b
		if testing.Verbose() {
			w = io.MultiWriter(b, os.Stderr)
		}
		o.Log = w
	}
}

// TestInstanceTypeProfilesTable: every profiled type is a value of the service model's
// ProductionVariantInstanceType enum (the emulator would refuse any other), the reference type and the
// emulator's own are factor 1, and every other factor says it is an assumption and why.
func TestInstanceTypeProfilesTable(t *testing.T) {
	enum := emulator.ProductionVariantInstanceTypes()
	types := emulator.ProfiledInstanceTypes()
	for _, want := range []string{"ml.g5.xlarge", "ml.g6.xlarge", "ml.g4dn.xlarge", "ml.c5.large", "ml.c5.xlarge", "ml.m5.large"} {
		if !slices.Contains(types, want) {
			t.Errorf("ProfiledInstanceTypes() = %v: no %s", types, want)
		}
	}
	if !slices.IsSorted(types) || slices.Contains(types, emulator.LocalInstanceType) {
		t.Errorf("ProfiledInstanceTypes() = %v: want the SageMaker types, sorted, without %q", types, emulator.LocalInstanceType)
	}
	for _, typ := range append(types, emulator.LocalInstanceType) {
		p, ok := emulator.InstanceTypeProfileFor(typ)
		if !ok || p.InstanceType != typ {
			t.Fatalf("InstanceTypeProfileFor(%q) = %+v, %v; want its profile", typ, p, ok)
		}
		if typ != emulator.LocalInstanceType && !slices.Contains(enum, typ) {
			t.Errorf("%s is not in the service model's ProductionVariantInstanceType enum", typ)
		}
		if p.LaunchFactor <= 0 || p.ServiceFactor <= 0 || p.Hardware == "" || p.LaunchBasis == "" || p.Basis == "" {
			t.Errorf("%s: %+v; want positive factors, the hardware and both bases", typ, p)
		}
		reference := typ == emulator.ReferenceInstanceType || typ == emulator.LocalInstanceType
		if reference && (p.LaunchFactor != 1 || p.ServiceFactor != 1) {
			t.Errorf("%s: launch factor %g, service factor %g; want 1 and 1", typ, p.LaunchFactor, p.ServiceFactor)
		}
		if !reference && (!strings.Contains(p.Basis, "ASSUMPTION") || !strings.Contains(p.LaunchBasis, "ASSUMPTION")) {
			t.Errorf("%s: bases %q and %q; want each to say it is an assumption", typ, p.LaunchBasis, p.Basis)
		}
	}
	for _, typ := range []string{"ml.m5.xlarge", "ml.bogus.xlarge", "ML.G5.XLARGE", ""} {
		if p, ok := emulator.InstanceTypeProfileFor(typ); ok {
			t.Errorf("InstanceTypeProfileFor(%q) = %+v, true; want no profile", typ, p)
		}
	}
}

// TestInstanceTypeOutsideEnumRefused: "The emulator refuses a type that is not in the
// service model's enum." ProductionVariant.InstanceType is a ProductionVariantInstanceType, an enum; the
// answer names the value. A type of the enum without a profile is accepted.
func TestInstanceTypeOutsideEnumRefused(t *testing.T) {
	r := emulatortest.Start(t)
	ctx := ctxFor(t, 30*time.Second)
	emulatortest.Model(t, r, "speech-types")
	create := func(config, typ string) error {
		_, err := r.SageMaker.CreateEndpointConfig(ctx, &sagemaker.CreateEndpointConfigInput{EndpointConfigName: aws.String(config),
			ProductionVariants: []smtypes.ProductionVariant{{VariantName: aws.String("AllTraffic"), ModelName: aws.String("speech-types"),
				InitialInstanceCount: aws.Int32(1), InstanceType: smtypes.ProductionVariantInstanceType(typ)}}})
		return err
	}
	for _, typ := range []string{"ml.bogus.xlarge", "ML.G5.XLARGE", "ml.g5.xlarge ", "g5.xlarge"} {
		err := create("speech-bad-type", typ)
		var ae smithy.APIError
		want := "Value '" + typ + "' at 'productionVariants.1.member.instanceType' failed to satisfy constraint: Member must satisfy enum value set: ["
		if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" || !strings.Contains(ae.ErrorMessage(), want) {
			t.Errorf("CreateEndpointConfig with InstanceType %q: %v; want ValidationException saying %q", typ, err, want)
		}
	}
	if _, err := r.SageMaker.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: aws.String("speech-bad-type")}); err == nil {
		t.Error("a refused endpoint config exists")
	}
	if err := create("speech-unprofiled-type", "ml.m5.xlarge"); err != nil {
		t.Errorf("CreateEndpointConfig with ml.m5.xlarge, an enum type without a profile: %v", err)
	}
}

// TestInstanceTypeServiceTime: the calibration twin on ml.g4dn.xlarge computes its
// per-segment time times the type's service factor: the container process gets the scaled
// CALIBRATION_SEGMENT_MS (its environment, as the kernel holds it), the model keeps the value it was created
// with (DescribeModel), the emulator logs it, and the endpoint really serves slower than one on ml.g5.xlarge.
// An UpdateEndpoint to a config of the slower type starts the new instances with the slower type's profile.
func TestInstanceTypeServiceTime(t *testing.T) {
	logs := &syncBuffer{}
	r := emulatortest.Start(t, emulatortest.Container(t), logTo(logs))
	ctx := ctxFor(t, 3*time.Minute)
	slow, ok := emulator.InstanceTypeProfileFor("ml.g4dn.xlarge")
	if !ok || slow.ServiceFactor < 1.5 {
		t.Fatalf("ml.g4dn.xlarge: %+v, %v; the test wants a type at least 1.5 times slower than ml.g5.xlarge", slow, ok)
	}
	const segmentMs = 300
	env := emulatortest.Env(map[string]string{"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "300", "ENGINE_WORKERS": "1", "FIRST_SEGMENT_RUNES": "0"})
	const fast, slower = "speech-type-g5", "speech-type-g4dn"
	emulatortest.Endpoint(t, r, fast, env, emulatortest.InstanceType("ml.g5.xlarge"))
	emulatortest.Endpoint(t, r, slower, env, emulatortest.InstanceType("ml.g4dn.xlarge"))
	emulatortest.WaitInService(ctx, t, r.SageMaker, fast)
	emulatortest.WaitInService(ctx, t, r.SageMaker, slower)

	wantScaled := int(segmentMs*slow.ServiceFactor + 0.5)
	// processSegment is the CALIBRATION_SEGMENT_MS the endpoint's serving container process runs with.
	processSegment := func(name string) string {
		pid, _ := r.InstancePID(t, name)
		environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			t.Fatalf("read the environment of %s's container process: %v", name, err)
		}
		return lastValue(strings.Split(string(environ), "\x00"), "CALIBRATION_SEGMENT_MS")
	}
	for name, want := range map[string]int{fast: segmentMs, slower: wantScaled} {
		if got := processSegment(name); got != strconv.Itoa(want) {
			t.Errorf("%s's container process has CALIBRATION_SEGMENT_MS=%s, want %d", name, got, want)
		}
		m, err := r.SageMaker.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: aws.String(name)})
		if err != nil || m.PrimaryContainer.Environment["CALIBRATION_SEGMENT_MS"] != "300" {
			t.Errorf("DescribeModel %s: %v; want the model's CALIBRATION_SEGMENT_MS as given, 300", name, err)
		}
	}
	if want := "CALIBRATION_SEGMENT_MS=" + strconv.Itoa(wantScaled) + " for instance type ml.g4dn.xlarge"; !strings.Contains(logs.String(), want) {
		t.Errorf("the emulator's log does not say %q", want)
	}

	// End to end: the fastest of a few requests on each, one at a time. The g4dn instance cannot answer
	// before its scaled compute; the g5 one answers well before that, and the ratio is about the factor (less,
	// as the fixed overhead of a request is the same on both).
	best := func(name string) time.Duration {
		b := time.Hour
		for range 4 {
			t0 := time.Now()
			if _, err := invokeText(ctx, r.Clients, name, "Hello there."); err != nil {
				t.Fatalf("InvokeEndpoint %s: %v", name, err)
			}
			b = min(b, time.Since(t0))
		}
		return b
	}
	g5, g4dn := best(fast), best(slower)
	floor := time.Duration(wantScaled) * time.Millisecond
	ratio := float64(g4dn) / float64(g5)
	t.Logf("fastest of 4 requests: ml.g5.xlarge %s, ml.g4dn.xlarge %s (ratio %.2f, factor %g)", g5, g4dn, ratio, slow.ServiceFactor)
	if g4dn < floor || g5 >= floor {
		t.Errorf("ml.g4dn.xlarge answered in %s and ml.g5.xlarge in %s; want the first at least its scaled compute, %s, and the second under it", g4dn, g5, floor)
	}
	if ratio < 0.6*slow.ServiceFactor || ratio > 1.25*slow.ServiceFactor {
		t.Errorf("ml.g4dn.xlarge took %.2f times as long as ml.g5.xlarge; want about its service factor %g (0.6 to 1.25 times it)", ratio, slow.ServiceFactor)
	}

	// A blue/green UpdateEndpoint to a config of another type starts its instances with that type's profile.
	emulatortest.Version(t, r, fast+"-v2", env, emulatortest.InstanceType("ml.g4dn.xlarge"))
	if _, err := r.SageMaker.UpdateEndpoint(ctx, &sagemaker.UpdateEndpointInput{EndpointName: aws.String(fast), EndpointConfigName: aws.String(fast + "-v2")}); err != nil {
		t.Fatalf("UpdateEndpoint %s to ml.g4dn.xlarge: %v", fast, err)
	}
	emulatortest.WaitInService(ctx, t, r.SageMaker, fast)
	if got := processSegment(fast); got != strconv.Itoa(wantScaled) {
		t.Errorf("after UpdateEndpoint to ml.g4dn.xlarge, %s's container process has CALIBRATION_SEGMENT_MS=%s, want %d", fast, got, wantScaled)
	}
}

// TestInstanceTypeLaunchPhases: with the kokoro-g5 profile fifty times faster, an instance
// of a type with a launch factor (ml.c5.large) logs its first event only after the profile's launch phases
// times the factor; one on ml.g5.xlarge after the phases as they are; one on an enum type without a profile
// (ml.m5.xlarge) runs as ml.g5.xlarge, and the emulator says once that it has no profile for it.
func TestInstanceTypeLaunchPhases(t *testing.T) {
	profile, err := emulator.BuiltinProfile(emulator.ProfileKokoroG5)
	if err != nil {
		t.Fatal(err)
	}
	const scale = 50
	logs := &syncBuffer{}
	r := emulatortest.Start(t, emulatortest.Container(t), logTo(logs), func(o *emulator.Options) { o.Profile, o.TimeScale = profile, scale })
	ctx := ctxFor(t, 3*time.Minute)
	slow, ok := emulator.InstanceTypeProfileFor("ml.c5.large")
	if !ok || slow.LaunchFactor < 1.2 {
		t.Fatalf("ml.c5.large: %+v, %v; the test wants a type whose launch takes at least 1.2 times ml.g5.xlarge's", slow, ok)
	}
	launch := profile.Total(emulator.PhaseLaunch) / scale
	cases := []struct {
		name, typ string
		instances int32
		want      time.Duration
	}{
		{"speech-launch-g5", "ml.g5.xlarge", 1, launch},
		{"speech-launch-c5", "ml.c5.large", 1, time.Duration(float64(launch) * slow.LaunchFactor)},
		{"speech-launch-m5x", "ml.m5.xlarge", 2, launch},
	}
	t0 := time.Now()
	for _, tc := range cases {
		emulatortest.Endpoint(t, r, tc.name, emulatortest.InstanceType(tc.typ), emulatortest.Instances(tc.instances))
	}
	// The container's own start on a busy 2-core machine, on top of the launch phases; log event timestamps
	// are whole milliseconds.
	const slack, tick = 5 * time.Second, time.Millisecond
	for _, tc := range cases {
		emulatortest.WaitInService(ctx, t, r.SageMaker, tc.name)
		streams := logStreams(ctx, t, r.Clients, tc.name)
		if len(streams) != int(tc.instances) {
			t.Fatalf("%s: log streams %v, want %d", tc.name, streams, tc.instances)
		}
		for _, s := range streams {
			if d := firstEventTime(ctx, t, r.Clients, tc.name, s).Sub(t0); d < tc.want-tick || d > tc.want+slack {
				t.Errorf("%s (%s): first event of %s %s after the endpoints were created; want the launch phases for the type, %s (up to %s more)", tc.name, tc.typ, s, d, tc.want, slack)
			}
		}
	}
	log := logs.String()
	if want := "× launch factor " + strconv.FormatFloat(slow.LaunchFactor, 'g', -1, 64) + " for instance type ml.c5.large"; !strings.Contains(log, want) {
		t.Errorf("the emulator's log does not say %q", want)
	}
	if n := strings.Count(log, `instance type "ml.m5.xlarge": the emulator has no instance-type profile for it`); n != 1 {
		t.Errorf("the emulator's log says %d times that ml.m5.xlarge has no profile (two instances); want once", n)
	}
	if strings.Contains(log, `instance type "ml.g5.xlarge": the emulator has no`) {
		t.Error("the emulator's log says ml.g5.xlarge has no profile")
	}
}

// lastValue is the value of the variable key in an environment list (the last one, as exec uses it).
func lastValue(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
