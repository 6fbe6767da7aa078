package emulator_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// Scheduled scaling conformance: PutScheduledAction, DescribeScheduledActions and DeleteScheduledAction through
// the real aws-sdk-go-v2 client, and the actions running at their time. Each case quotes the Application Auto
// Scaling API Reference (the same text as botocore's application-autoscaling model) or the user guide's
// scheduled-scaling pages.

// testClock is an emulator clock the test moves (emulator.Options.Clock).
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func withClock(c *testClock) emulatortest.Option {
	return func(o *emulator.Options) { o.Clock = c.Now }
}

func registerScheduledTarget(ctx context.Context, t *testing.T, c *applicationautoscaling.Client, endpoint string, minC, maxC int32) string {
	t.Helper()
	res := emulator.ResourceIDOf(endpoint, "AllTraffic")
	if _, err := c.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim,
		MinCapacity: aws.Int32(minC), MaxCapacity: aws.Int32(maxC),
	}); err != nil {
		t.Fatalf("RegisterScalableTarget %s: %v", res, err)
	}
	return res
}

func putScheduled(ctx context.Context, c *applicationautoscaling.Client, res, name, schedule string, minC, maxC *int32, mod ...func(*applicationautoscaling.PutScheduledActionInput)) error {
	in := &applicationautoscaling.PutScheduledActionInput{ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim,
		ScheduledActionName: aws.String(name), Schedule: aws.String(schedule)}
	if minC != nil || maxC != nil {
		in.ScalableTargetAction = &aastypes.ScalableTargetAction{MinCapacity: minC, MaxCapacity: maxC}
	}
	for _, m := range mod {
		m(in)
	}
	_, err := c.PutScheduledAction(ctx, in)
	return err
}

func scheduledNames(acts []aastypes.ScheduledAction) []string {
	var out []string
	for _, a := range acts {
		out = append(out, aws.ToString(a.ScheduledActionName))
	}
	return out
}

// TestConformanceScheduledActionsControlPlane: put, describe (filters, pages), update, delete and every refusal,
// on endpoints that never start (no container binary), then a restart that keeps the actions.
func TestConformanceScheduledActionsControlPlane(t *testing.T) {
	dir := t.TempDir()
	r := emulatortest.Start(t, emulatortest.StateDir(dir))
	c := r.Clients.AutoScaling
	ctx := ctxFor(t, 2*time.Minute)
	for _, n := range []string{"speech-sched-a", "speech-sched-b", "speech-sched-unregistered"} {
		emulatortest.Endpoint(t, r, n)
	}
	resA := registerScheduledTarget(ctx, t, c, "speech-sched-a", 1, 4)
	resB := registerScheduledTarget(ctx, t, c, "speech-sched-b", 1, 4)
	start, end := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []struct {
		res, name, schedule string
		mod                 func(*applicationautoscaling.PutScheduledActionInput)
	}{
		{resA, "a-morning", "cron(30 6 ? * MON *)", func(in *applicationautoscaling.PutScheduledActionInput) {
			in.Timezone, in.StartTime, in.EndTime = aws.String("Pacific/Tahiti"), &start, &end
		}},
		{resA, "a-once", "at(2030-05-20T18:35:00)", nil},
		{resA, "a-rate", "rate(6 hours)", nil},
		{resB, "b-once", "at(2030-05-20T18:40:00)", nil},
	} {
		mods := []func(*applicationautoscaling.PutScheduledActionInput){}
		if p.mod != nil {
			mods = append(mods, p.mod)
		}
		if err := putScheduled(ctx, c, p.res, p.name, p.schedule, aws.Int32(2), aws.Int32(3), mods...); err != nil {
			t.Fatalf("PutScheduledAction %s: %v", p.name, err)
		}
	}
	all := []string{"a-morning", "a-once", "a-rate", "b-once"}

	// "Describes the Application Auto Scaling scheduled actions for the specified service namespace. You can
	// filter the results using the ResourceId, ScalableDimension, and ScheduledActionNames parameters."
	t.Run("describe filters", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			in   applicationautoscaling.DescribeScheduledActionsInput
			want []string
		}{
			{"namespace", applicationautoscaling.DescribeScheduledActionsInput{}, all},
			{"resource", applicationautoscaling.DescribeScheduledActionsInput{ResourceId: aws.String(resA)}, all[:3]},
			{"resource and dimension", applicationautoscaling.DescribeScheduledActionsInput{ResourceId: aws.String(resB), ScalableDimension: smDim}, all[3:]},
			{"names", applicationautoscaling.DescribeScheduledActionsInput{ScheduledActionNames: []string{"a-rate", "b-once", "missing"}}, []string{"a-rate", "b-once"}},
			{"names and resource", applicationautoscaling.DescribeScheduledActionsInput{ResourceId: aws.String(resA), ScheduledActionNames: []string{"a-rate", "b-once"}}, []string{"a-rate"}},
			{"other namespace", applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: aastypes.ServiceNamespaceEcs}, nil},
		} {
			in := tc.in
			if in.ServiceNamespace == "" {
				in.ServiceNamespace = smNS
			}
			out, err := c.DescribeScheduledActions(ctx, &in)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := scheduledNames(out.ScheduledActions); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
	})

	// ScheduledAction's members as the example of describe-scheduled-actions shows them, the ARN of the form
	// arn:aws:autoscaling:<region>:<account>:scheduledAction:<id>:resource/<namespace>/<resource id>:
	// scheduledActionName/<name>.
	t.Run("describe shape", func(t *testing.T) {
		out, err := c.DescribeScheduledActions(ctx, &applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: smNS, ScheduledActionNames: []string{"a-morning"}})
		if err != nil || len(out.ScheduledActions) != 1 {
			t.Fatalf("DescribeScheduledActions: %+v, %v", out, err)
		}
		a := out.ScheduledActions[0]
		arn := aws.ToString(a.ScheduledActionARN)
		if !strings.HasPrefix(arn, "arn:aws:autoscaling:us-east-1:000000000000:scheduledAction:") ||
			!strings.HasSuffix(arn, ":resource/sagemaker/"+resA+":scheduledActionName/a-morning") {
			t.Errorf("ScheduledActionARN %q", arn)
		}
		if aws.ToString(a.Schedule) != "cron(30 6 ? * MON *)" || aws.ToString(a.Timezone) != "Pacific/Tahiti" ||
			a.ServiceNamespace != smNS || a.ScalableDimension != smDim || aws.ToString(a.ResourceId) != resA ||
			a.StartTime == nil || !a.StartTime.Equal(start) || a.EndTime == nil || !a.EndTime.Equal(end) || a.CreationTime == nil ||
			a.ScalableTargetAction == nil || aws.ToInt32(a.ScalableTargetAction.MinCapacity) != 2 || aws.ToInt32(a.ScalableTargetAction.MaxCapacity) != 3 {
			t.Errorf("scheduled action %+v", a)
		}
	})

	// MaxResults: "This value can be between 1 and 50. The default value is 50. If this parameter is used, the
	// operation returns up to MaxResults results at a time, along with a NextToken value."
	t.Run("pages", func(t *testing.T) {
		var got []string
		var token *string
		pages := 0
		for {
			out, err := c.DescribeScheduledActions(ctx, &applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: smNS, MaxResults: aws.Int32(3), NextToken: token})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			got = append(got, scheduledNames(out.ScheduledActions)...)
			if token = out.NextToken; token == nil {
				break
			}
		}
		if pages != 2 || strings.Join(got, ",") != strings.Join(all, ",") {
			t.Errorf("%d pages of %v, want 2 pages of %v", pages, got, all)
		}
		// The SDK's paginator walks the same pages.
		p := applicationautoscaling.NewDescribeScheduledActionsPaginator(c, &applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: smNS, MaxResults: aws.Int32(1)})
		n := 0
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n += len(out.ScheduledActions)
		}
		if n != len(all) {
			t.Errorf("paginator listed %d actions, want %d", n, len(all))
		}
	})

	// Refusals of DescribeScheduledActions.
	t.Run("describe refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, code string
			in         applicationautoscaling.DescribeScheduledActionsInput
		}{
			// ScalableDimension: "If you specify a scalable dimension, you must also specify a resource ID."
			{"dimension without resource", "ValidationException", applicationautoscaling.DescribeScheduledActionsInput{ScalableDimension: smDim}},
			{"MaxResults 0", "ValidationException", applicationautoscaling.DescribeScheduledActionsInput{MaxResults: aws.Int32(0)}},
			{"MaxResults 51", "ValidationException", applicationautoscaling.DescribeScheduledActionsInput{MaxResults: aws.Int32(51)}},
			// InvalidNextTokenException: "The next token supplied was invalid."
			{"foreign token", "InvalidNextTokenException", applicationautoscaling.DescribeScheduledActionsInput{NextToken: aws.String("not-a-token")}},
			// ServiceNamespace enum.
			{"namespace", "ValidationException", applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: "sagemakerx"}},
			// ScheduledActionNames: at most 50 (the model's list bound).
			{"51 names", "ValidationException", applicationautoscaling.DescribeScheduledActionsInput{ScheduledActionNames: make51()}},
		} {
			in := tc.in
			if in.ServiceNamespace == "" {
				in.ServiceNamespace = smNS
			}
			if _, err := c.DescribeScheduledActions(ctx, &in); apiCode(err) != tc.code {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
			}
		}
	})

	// Refusals of PutScheduledAction; none of them stores anything.
	t.Run("put refused", func(t *testing.T) {
		type input = applicationautoscaling.PutScheduledActionInput
		cases := []struct {
			name, code string
			mod        func(*input)
		}{
			// "You cannot create a scheduled action until you have registered the resource as a scalable target."
			{"unregistered target", "ObjectNotFoundException", func(in *input) {
				in.ResourceId = aws.String(emulator.ResourceIDOf("speech-sched-unregistered", "AllTraffic"))
			}},
			// The emulator scales SageMaker variants only.
			{"ecs namespace", "ValidationException", func(in *input) {
				in.ServiceNamespace, in.ScalableDimension = aastypes.ServiceNamespaceEcs, aastypes.ScalableDimensionECSServiceDesiredCount
			}},
			// A new action needs a Schedule (ScheduledAction's Schedule is required).
			{"no schedule", "ValidationException", func(in *input) { in.Schedule = nil }},
			// Timezone: "Valid values are the canonical names of the IANA time zones".
			{"timezone", "ValidationException", func(in *input) { in.Timezone = aws.String("Mars/Olympus_Mons") }},
			// StartTime and EndTime "form the boundaries for when the recurring action starts and stops".
			{"end before start", "ValidationException", func(in *input) { in.StartTime, in.EndTime = &end, &start }},
			{"end at start", "ValidationException", func(in *input) { in.StartTime, in.EndTime = &start, &start }},
			// "you must include both sizes to ensure that the new minimum capacity is not greater than the maximum
			// capacity".
			{"min above max", "ValidationException", func(in *input) {
				in.ScalableTargetAction = &aastypes.ScalableTargetAction{MinCapacity: aws.Int32(3), MaxCapacity: aws.Int32(2)}
			}},
			{"negative min", "ValidationException", func(in *input) {
				in.ScalableTargetAction = &aastypes.ScalableTargetAction{MinCapacity: aws.Int32(-1)}
			}},
			{"negative max", "ValidationException", func(in *input) {
				in.ScalableTargetAction = &aastypes.ScalableTargetAction{MaxCapacity: aws.Int32(-1)}
			}},
			// ScheduledActionName's pattern: no control character, no : / |, no leading or trailing space.
			{"name with colon", "ValidationException", func(in *input) { in.ScheduledActionName = aws.String("scale:out") }},
			{"name with slash", "ValidationException", func(in *input) { in.ScheduledActionName = aws.String("scale/out") }},
			{"name with bar", "ValidationException", func(in *input) { in.ScheduledActionName = aws.String("scale|out") }},
			{"name with leading space", "ValidationException", func(in *input) { in.ScheduledActionName = aws.String(" scale") }},
			{"name with trailing space", "ValidationException", func(in *input) { in.ScheduledActionName = aws.String("scale ") }},
			{"name with newline", "ValidationException", func(in *input) { in.ScheduledActionName = aws.String("scale\nout") }},
			{"name of 257", "ValidationException", func(in *input) { in.ScheduledActionName = aws.String(strings.Repeat("n", 257)) }},
		}
		// Schedule: at, rate and cron forms only (schedule_test.go's badSchedules, each broken one way).
		for _, s := range emulator.BadSchedules {
			cases = append(cases, struct {
				name, code string
				mod        func(*input)
			}{"schedule " + s, "ValidationException", func(in *input) { in.Schedule = aws.String(s) }})
		}
		for _, tc := range cases {
			in := input{ServiceNamespace: smNS, ResourceId: aws.String(resA), ScalableDimension: smDim,
				ScheduledActionName: aws.String("refused"), Schedule: aws.String("rate(1 day)")}
			tc.mod(&in)
			if _, err := c.PutScheduledAction(ctx, &in); apiCode(err) != tc.code {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
			}
		}
		out, err := c.DescribeScheduledActions(ctx, &applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: smNS})
		if err != nil || len(out.ScheduledActions) != len(all) {
			t.Errorf("after the refusals: %v, %v; want the %d actions put", scheduledNames(out.ScheduledActions), err, len(all))
		}
		// Names the pattern allows: inner spaces, dots, non-ASCII letters.
		for _, name := range []string{"scale out at 6", "scale.out", "escalade-été"} {
			if err := putScheduled(ctx, c, resB, name, "rate(1 day)", aws.Int32(1), nil); err != nil {
				t.Errorf("PutScheduledAction %q: %v", name, err)
			} else if _, err := c.DeleteScheduledAction(ctx, &applicationautoscaling.DeleteScheduledActionInput{ServiceNamespace: smNS,
				ResourceId: aws.String(resB), ScalableDimension: smDim, ScheduledActionName: aws.String(name)}); err != nil {
				t.Errorf("DeleteScheduledAction %q: %v", name, err)
			}
		}
	})

	// The quota "Scheduled actions per scalable target": 200, not adjustable. The 201st is refused
	// (ValidationException: the SDKs would retry the quota's LimitExceededException as a throttle); an update of
	// one of the 200 is not a new action.
	t.Run("quota", func(t *testing.T) {
		emulatortest.Endpoint(t, r, "speech-sched-quota")
		res := registerScheduledTarget(ctx, t, c, "speech-sched-quota", 1, 4)
		for i := range 200 {
			if err := putScheduled(ctx, c, res, fmt.Sprintf("q%03d", i), "rate(1 day)", aws.Int32(1), nil); err != nil {
				t.Fatalf("action %d: %v", i+1, err)
			}
		}
		if err := putScheduled(ctx, c, res, "q200", "rate(1 day)", aws.Int32(1), nil); apiCode(err) != "ValidationException" {
			t.Errorf("the 201st action: %v, want ValidationException", err)
		}
		if err := putScheduled(ctx, c, res, "q000", "rate(2 days)", aws.Int32(1), nil); err != nil {
			t.Errorf("updating one of the 200: %v", err)
		}
		if _, err := c.DeregisterScalableTarget(ctx, &applicationautoscaling.DeregisterScalableTargetInput{ServiceNamespace: smNS,
			ResourceId: aws.String(res), ScalableDimension: smDim}); err != nil {
			t.Fatal(err)
		}
	})

	// "To update a scheduled action, specify the parameters that you want to change. If you don't specify start
	// and end times, the old values are deleted."
	t.Run("update", func(t *testing.T) {
		before, err := c.DescribeScheduledActions(ctx, &applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: smNS, ScheduledActionNames: []string{"a-morning"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutScheduledAction(ctx, &applicationautoscaling.PutScheduledActionInput{ServiceNamespace: smNS, ResourceId: aws.String(resA),
			ScalableDimension: smDim, ScheduledActionName: aws.String("a-morning"),
			ScalableTargetAction: &aastypes.ScalableTargetAction{MinCapacity: aws.Int32(1)}}); err != nil {
			t.Fatal(err)
		}
		after, err := c.DescribeScheduledActions(ctx, &applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: smNS, ScheduledActionNames: []string{"a-morning"}})
		if err != nil || len(after.ScheduledActions) != 1 {
			t.Fatal(err)
		}
		b, a := before.ScheduledActions[0], after.ScheduledActions[0]
		if aws.ToString(a.Schedule) != aws.ToString(b.Schedule) || aws.ToString(a.Timezone) != "Pacific/Tahiti" ||
			aws.ToString(a.ScheduledActionARN) != aws.ToString(b.ScheduledActionARN) || !a.CreationTime.Equal(*b.CreationTime) {
			t.Errorf("the update changed what it did not name: %+v, was %+v", a, b)
		}
		if a.StartTime != nil || a.EndTime != nil {
			t.Errorf("StartTime %v, EndTime %v after an update without them, want both deleted", a.StartTime, a.EndTime)
		}
		if a.ScalableTargetAction == nil || aws.ToInt32(a.ScalableTargetAction.MinCapacity) != 1 || a.ScalableTargetAction.MaxCapacity != nil {
			t.Errorf("ScalableTargetAction %+v, want MinCapacity 1 only", a.ScalableTargetAction)
		}
	})

	// "Deletes the specified scheduled action for an Application Auto Scaling scalable target."
	t.Run("delete", func(t *testing.T) {
		del := &applicationautoscaling.DeleteScheduledActionInput{ServiceNamespace: smNS, ResourceId: aws.String(resA), ScalableDimension: smDim, ScheduledActionName: aws.String("a-rate")}
		if _, err := c.DeleteScheduledAction(ctx, del); err != nil {
			t.Fatal(err)
		}
		// DeleteScheduledAction's ObjectNotFoundException: "The specified object could not be found."
		if _, err := c.DeleteScheduledAction(ctx, del); apiCode(err) != "ObjectNotFoundException" {
			t.Errorf("deleting it again: %v, want ObjectNotFoundException", err)
		}
		// The same name on another target is another action.
		other := *del
		other.ResourceId = aws.String(resB)
		if _, err := c.DeleteScheduledAction(ctx, &other); apiCode(err) != "ObjectNotFoundException" {
			t.Errorf("deleting a-rate of %s: %v, want ObjectNotFoundException", resB, err)
		}
		out, err := c.DescribeScheduledActions(ctx, &applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: smNS})
		if got := scheduledNames(out.ScheduledActions); err != nil || strings.Join(got, ",") != "a-morning,a-once,b-once" {
			t.Errorf("after the delete: %v, %v", got, err)
		}
	})

	// The actions are in state.json: a restarted emulator lists them.
	t.Run("restart keeps them", func(t *testing.T) {
		r.Stop()
		r2 := emulatortest.Start(t, emulatortest.StateDir(dir))
		out, err := r2.Clients.AutoScaling.DescribeScheduledActions(ctx, &applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: smNS})
		if got := scheduledNames(out.ScheduledActions); err != nil || strings.Join(got, ",") != "a-morning,a-once,b-once" {
			t.Errorf("after a restart: %v, %v", got, err)
		}
		// "If a scalable target is deregistered, the scalable target is no longer available to run scheduled
		// actions. Any scheduled actions that were specified for the scalable target are deleted."
		if _, err := r2.Clients.AutoScaling.DeregisterScalableTarget(ctx, &applicationautoscaling.DeregisterScalableTargetInput{ServiceNamespace: smNS,
			ResourceId: aws.String(resA), ScalableDimension: smDim}); err != nil {
			t.Fatal(err)
		}
		out, err = r2.Clients.AutoScaling.DescribeScheduledActions(ctx, &applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: smNS})
		if got := scheduledNames(out.ScheduledActions); err != nil || strings.Join(got, ",") != "b-once" {
			t.Errorf("after deregistering %s: %v, %v; want b-once only", resA, got, err)
		}
	})
}

func make51() []string {
	out := make([]string, 51)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i)
	}
	return out
}

// scalingActivities lists the target's activities, newest first, as DescribeScalingActivities returns them.
func scalingActivities(ctx context.Context, t *testing.T, c *applicationautoscaling.Client, res string) []aastypes.ScalingActivity {
	t.Helper()
	out, err := c.DescribeScalingActivities(ctx, &applicationautoscaling.DescribeScalingActivitiesInput{ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim})
	if err != nil {
		t.Fatalf("DescribeScalingActivities: %v", err)
	}
	return out.ScalingActivities
}

func targetBounds(ctx context.Context, t *testing.T, c *applicationautoscaling.Client, res string) (int32, int32) {
	t.Helper()
	out, err := c.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: smNS, ResourceIds: []string{res}})
	if err != nil || len(out.ScalableTargets) != 1 {
		t.Fatalf("DescribeScalableTargets: %+v, %v", out, err)
	}
	return aws.ToInt32(out.ScalableTargets[0].MinCapacity), aws.ToInt32(out.ScalableTargets[0].MaxCapacity)
}

// TestConformanceScheduledActionsClock: actions run on the emulator's clock, which the test moves: a cron
// expression in a time zone runs at its local time and not before; two actions of one target due together run
// in the order of their times; a suspended target's action does not run; a scale-out the endpoint cannot take
// fails as AWS documents.
func TestConformanceScheduledActionsClock(t *testing.T) {
	clock := &testClock{t: time.Date(2027, 1, 4, 17, 59, 0, 0, time.UTC)} // 07:59 in Tahiti (UTC-10)
	r := emulatortest.Start(t, withClock(clock))
	c := r.Clients.AutoScaling
	ctx := ctxFor(t, 2*time.Minute)
	for _, n := range []string{"speech-clock-a", "speech-clock-b", "speech-clock-c"} {
		emulatortest.Endpoint(t, r, n)
	}
	resA := registerScheduledTarget(ctx, t, c, "speech-clock-a", 0, 4)
	resB := registerScheduledTarget(ctx, t, c, "speech-clock-b", 0, 4)
	resC := registerScheduledTarget(ctx, t, c, "speech-clock-c", 0, 4)

	// "At and cron expressions use Universal Coordinated Time (UTC) by default." Timezone: "Specifies the time
	// zone used when setting a scheduled action by using an at or cron expression."
	if err := putScheduled(ctx, c, resA, "tahiti-8am", "cron(0 8 * * ? *)", aws.Int32(1), aws.Int32(3),
		func(in *applicationautoscaling.PutScheduledActionInput) { in.Timezone = aws.String("Pacific/Tahiti") }); err != nil {
		t.Fatal(err)
	}
	// Two one-time actions of one target whose times both pass in one step of the clock: "The order of execution
	// for scheduled actions is guaranteed for the same scalable target".
	if err := putScheduled(ctx, c, resB, "second", "at(2027-01-04T18:00:02)", nil, aws.Int32(3)); err != nil {
		t.Fatal(err)
	}
	if err := putScheduled(ctx, c, resB, "first", "at(2027-01-04T18:00:01)", aws.Int32(1), aws.Int32(4)); err != nil {
		t.Fatal(err)
	}
	// An action due now (at the clock's current second) runs at the scheduler's next tick: when its activities
	// appear, the scheduler has read the clock a minute before tahiti-8am's time, and must not have run it.
	// Its endpoint has 1 instance and never started (no container), so raising the minimum to 2 needs a
	// scale-out it cannot take: "To complete a scheduled action successfully, the specified resource must be in
	// a scalable state in the target service. If it isn't, the request fails and returns an error message, for
	// example, Resource Id [ActualResourceId] is not scalable. Reason: ..."
	if err := putScheduled(ctx, c, resC, "now", "at(2027-01-04T17:59:00)", aws.Int32(2), aws.Int32(4)); err != nil {
		t.Fatal(err)
	}
	eventually(t, hangBound, "the action due now to run", func() bool { return len(scalingActivities(ctx, t, c, resC)) == 2 })
	if acts := scalingActivities(ctx, t, c, resA); len(acts) != 0 {
		t.Fatalf("activities before the action's time: %s", describeActivities(acts))
	}
	acts := scalingActivities(ctx, t, c, resC)
	if acts[0].StatusCode != aastypes.ScalingActivityStatusCodeFailed || aws.ToString(acts[0].Description) != "Setting desired instance count to 2." ||
		aws.ToString(acts[0].Cause) != "minimum capacity was set to 2" ||
		!strings.HasPrefix(aws.ToString(acts[0].StatusMessage), "Resource Id ["+resC+"] is not scalable. Reason: ") {
		t.Errorf("the scale-out of an endpoint that is not InService: %s", describeActivities(acts))
	}
	if aws.ToString(acts[1].Cause) != "scheduled action name now was triggered" || acts[1].StatusCode != aastypes.ScalingActivityStatusCodeSuccessful {
		t.Errorf("the action's own activity: %s", describeActivities(acts[1:]))
	}

	clock.Set(time.Date(2027, 1, 4, 18, 0, 5, 0, time.UTC)) // 08:00:05 in Tahiti
	eventually(t, hangBound, "the scheduled actions to run", func() bool {
		return len(scalingActivities(ctx, t, c, resA)) > 0 && len(scalingActivities(ctx, t, c, resB)) >= 2
	})
	// "A scheduled action sets the MinCapacity and MaxCapacity to what is specified by the scheduled action at
	// the date and time specified." The activity is the one AWS's describe-scaling-activities example shows.
	acts = scalingActivities(ctx, t, c, resA)
	if len(acts) != 1 || aws.ToString(acts[0].Description) != "Setting min capacity to 1 and max capacity to 3" ||
		aws.ToString(acts[0].Cause) != "scheduled action name tahiti-8am was triggered" ||
		acts[0].StatusCode != aastypes.ScalingActivityStatusCodeSuccessful ||
		aws.ToString(acts[0].StatusMessage) != "Successfully set min capacity to 1 and max capacity to 3" {
		t.Errorf("activities of %s: %s", resA, describeActivities(acts))
	}
	if minC, maxC := targetBounds(ctx, t, c, resA); minC != 1 || maxC != 3 {
		t.Errorf("%s bounds [%d, %d], want [1, 3]", resA, minC, maxC)
	}
	// Newest first: "second" ran after "first".
	acts = scalingActivities(ctx, t, c, resB)
	var causes []string
	for _, a := range acts {
		causes = append(causes, aws.ToString(a.Cause))
	}
	want := []string{"scheduled action name second was triggered", "scheduled action name first was triggered"}
	if strings.Join(causes, "|") != strings.Join(want, "|") {
		t.Fatalf("causes of %s's activities, newest first: %q, want %q", resB, causes, want)
	}
	if aws.ToString(acts[0].Description) != "Setting max capacity to 3" || aws.ToString(acts[1].Description) != "Setting min capacity to 1 and max capacity to 4" {
		t.Errorf("activities of %s: %s", resB, describeActivities(acts))
	}
	if minC, maxC := targetBounds(ctx, t, c, resB); minC != 1 || maxC != 3 {
		t.Errorf("%s bounds [%d, %d], want [1, 3]: first's minimum, then second's maximum", resB, minC, maxC)
	}

	// "You can temporarily turn off scheduled scaling for a scalable target. This helps you prevent scheduled
	// actions from being active without having to delete them." resC is suspended; resA's action, due at the
	// same instant, shows the scheduler ran.
	if _, err := c.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{ServiceNamespace: smNS, ResourceId: aws.String(resC),
		ScalableDimension: smDim, SuspendedState: &aastypes.SuspendedState{ScheduledScalingSuspended: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	if err := putScheduled(ctx, c, resC, "suspended", "cron(0 8 * * ? *)", aws.Int32(1), aws.Int32(2),
		func(in *applicationautoscaling.PutScheduledActionInput) { in.Timezone = aws.String("Pacific/Tahiti") }); err != nil {
		t.Fatal(err)
	}
	clock.Set(time.Date(2027, 1, 5, 18, 0, 5, 0, time.UTC)) // the next day, 08:00:05 in Tahiti
	eventually(t, hangBound, "the next day's run of tahiti-8am", func() bool { return len(scalingActivities(ctx, t, c, resA)) == 2 })
	if acts := scalingActivities(ctx, t, c, resC); len(acts) != 2 {
		t.Errorf("a suspended target's action ran: %s", describeActivities(acts))
	}
	if minC, maxC := targetBounds(ctx, t, c, resC); minC != 2 || maxC != 4 {
		t.Errorf("%s bounds [%d, %d], want [2, 4] unchanged", resC, minC, maxC)
	}
}

func describeActivities(acts []aastypes.ScalingActivity) string {
	var b strings.Builder
	for _, a := range acts {
		fmt.Fprintf(&b, "\n  %s | %s | %s | %s", aws.ToString(a.Description), aws.ToString(a.Cause), a.StatusCode, aws.ToString(a.StatusMessage))
	}
	return b.String()
}

// TestConformanceScheduledActionScalesOut: an at() action a few seconds ahead raises the minimum above the
// endpoint's instance count, and the endpoint scales out to it: "If current capacity is less than the specified
// minimum capacity, Application Auto Scaling scales out (increases capacity) to the specified minimum
// capacity." The activities are AWS's: the bounds set by the action, then the scale-out caused by the new
// minimum.
func TestConformanceScheduledActionScalesOut(t *testing.T) {
	r := emulatortest.Start(t, emulatortest.Container(t))
	c := r.Clients
	ctx := ctxFor(t, 3*time.Minute)
	const name = "speech-sched-out"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(1), emulatortest.InService())
	res := registerScheduledTarget(ctx, t, c.AutoScaling, name, 1, 3)
	// A few seconds ahead on the wall clock. An instant already past when the action is put does not run, so
	// the put must return before it: on a machine too loaded for that, the action is put again further ahead.
	var at time.Time
	for ahead := 3 * time.Second; ; ahead *= 2 {
		at = time.Now().UTC().Add(ahead).Truncate(time.Second)
		if err := putScheduled(ctx, c.AutoScaling, res, "morning-peak", "at("+at.Format("2006-01-02T15:04:05")+")", aws.Int32(2), aws.Int32(3)); err != nil {
			t.Fatal(err)
		}
		if time.Now().Before(at) {
			break
		}
		if ahead > time.Minute {
			t.Fatalf("PutScheduledAction took longer than %s", ahead)
		}
	}
	eventually(t, hangBound, "the endpoint to serve 2 instances", func() bool {
		out, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
		return err == nil && out.EndpointStatus == "InService" && len(out.ProductionVariants) == 1 &&
			aws.ToInt32(out.ProductionVariants[0].CurrentInstanceCount) == 2
	})
	acts := scalingActivities(ctx, t, c.AutoScaling, res)
	if len(acts) != 2 {
		t.Fatalf("activities: %s; want the scheduled action's and its scale-out", describeActivities(acts))
	}
	out, set := acts[0], acts[1]
	if aws.ToString(set.Description) != "Setting min capacity to 2 and max capacity to 3" || aws.ToString(set.Cause) != "scheduled action name morning-peak was triggered" ||
		set.StatusCode != aastypes.ScalingActivityStatusCodeSuccessful {
		t.Errorf("the scheduled action's activity: %s", describeActivities(acts[1:]))
	}
	if aws.ToString(out.Description) != "Setting desired instance count to 2." || aws.ToString(out.Cause) != "minimum capacity was set to 2" {
		t.Errorf("the scale-out: %s", describeActivities(acts[:1]))
	}
	eventually(t, hangBound, "the scale-out to complete", func() bool {
		a := scalingActivities(ctx, t, c.AutoScaling, res)
		return len(a) == 2 && a[0].StatusCode == aastypes.ScalingActivityStatusCodeSuccessful
	})
	// The action ran at its time, not before: the activity started at or after it.
	if set.StartTime == nil || set.StartTime.Before(at) || out.StartTime.Before(*set.StartTime) {
		t.Errorf("the action's activity started %v, its scale-out %v; the action's time is %v", set.StartTime, out.StartTime, at)
	}
	if minC, maxC := targetBounds(ctx, t, c.AutoScaling, res); minC != 2 || maxC != 3 {
		t.Errorf("bounds [%d, %d], want [2, 3]", minC, maxC)
	}
}

// TestConformanceScheduledActionsMissedWhileStopped: a restarted emulator runs an action whose time passed
// while it was stopped once, at its first tick, not once per missed instant, then keeps the schedule (the
// emulator's choice: AWS documents no stop).
func TestConformanceScheduledActionsMissedWhileStopped(t *testing.T) {
	dir := t.TempDir()
	clock := &testClock{t: time.Date(2027, 1, 4, 0, 0, 0, 0, time.UTC)}
	r := emulatortest.Start(t, emulatortest.StateDir(dir), withClock(clock))
	ctx := ctxFor(t, 2*time.Minute)
	emulatortest.Endpoint(t, r, "speech-sched-missed")
	res := registerScheduledTarget(ctx, t, r.Clients.AutoScaling, "speech-sched-missed", 1, 4)
	if err := putScheduled(ctx, r.Clients.AutoScaling, res, "hourly", "rate(1 hour)", aws.Int32(1), aws.Int32(3)); err != nil {
		t.Fatal(err)
	}
	r.Stop()

	clock.Set(time.Date(2027, 1, 4, 3, 30, 0, 0, time.UTC)) // 01:00, 02:00 and 03:00 passed while stopped
	r2 := emulatortest.Start(t, emulatortest.StateDir(dir), withClock(clock))
	c := r2.Clients.AutoScaling
	// One scheduler pass runs every due action under one lock: once one activity is listed, all that pass
	// recorded are.
	eventually(t, hangBound, "the missed run", func() bool { return len(scalingActivities(ctx, t, c, res)) > 0 })
	if acts := scalingActivities(ctx, t, c, res); len(acts) != 1 {
		t.Fatalf("after the restart: %s; want one run for the three missed instants", describeActivities(acts))
	}
	clock.Set(time.Date(2027, 1, 4, 4, 0, 1, 0, time.UTC))
	eventually(t, hangBound, "the 04:00 run", func() bool { return len(scalingActivities(ctx, t, c, res)) == 2 })
}
