package cloud_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/cloudtest"
)

const (
	worldEndpoint = "speech-espeak-ng"
	worldVariant  = "AllTraffic"
)

// world is one endpoint variant and its optional scalable target behind the SageMaker and Application Auto
// Scaling doubles. An instance count change moves the endpoint to Updating for updating describes.
type world struct {
	sm  cloudtest.SageMaker
	aas cloudtest.AutoScaling

	status   smtypes.EndpointStatus
	updating int // DescribeEndpoint answers Updating this many more times
	desired  int32
	target   *aastypes.ScalableTarget
	calls    []string
	// failUpdate and failRegister make those calls fail.
	failUpdate, failRegister error
	// tags are the endpoint's tags (ListTags, AddTags, DeleteTags on worldArn).
	tags map[string]string
}

const worldArn = "arn:aws:sagemaker:us-east-1:000000000000:endpoint/" + worldEndpoint

func newWorld(desired int32, target *aastypes.ScalableTarget) *world {
	w := &world{status: smtypes.EndpointStatusInService, desired: desired, target: target, tags: map[string]string{}}
	w.sm.ListTagsFn = func(_ context.Context, in *sagemaker.ListTagsInput, _ ...func(*sagemaker.Options)) (*sagemaker.ListTagsOutput, error) {
		w.calls = append(w.calls, "ListTags")
		if aws.ToString(in.ResourceArn) != worldArn {
			return nil, errors.New("ListTags: wrong ARN " + aws.ToString(in.ResourceArn))
		}
		out := &sagemaker.ListTagsOutput{}
		for k, v := range w.tags {
			out.Tags = append(out.Tags, smtypes.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		return out, nil
	}
	w.sm.AddTagsFn = func(_ context.Context, in *sagemaker.AddTagsInput, _ ...func(*sagemaker.Options)) (*sagemaker.AddTagsOutput, error) {
		w.calls = append(w.calls, "AddTags")
		for _, t := range in.Tags {
			w.tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		return &sagemaker.AddTagsOutput{}, nil
	}
	w.sm.DeleteTagsFn = func(_ context.Context, in *sagemaker.DeleteTagsInput, _ ...func(*sagemaker.Options)) (*sagemaker.DeleteTagsOutput, error) {
		w.calls = append(w.calls, "DeleteTags")
		for _, k := range in.TagKeys {
			delete(w.tags, k)
		}
		return &sagemaker.DeleteTagsOutput{}, nil
	}
	w.sm.DescribeEndpointFn = func(_ context.Context, in *sagemaker.DescribeEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
		w.calls = append(w.calls, "DescribeEndpoint")
		status := w.status
		if w.updating > 0 {
			w.updating--
			status = smtypes.EndpointStatusUpdating
		}
		return &sagemaker.DescribeEndpointOutput{EndpointName: in.EndpointName, EndpointArn: aws.String(worldArn), EndpointStatus: status,
			ProductionVariants: []smtypes.ProductionVariantSummary{{VariantName: aws.String(worldVariant), DesiredInstanceCount: aws.Int32(w.desired), CurrentInstanceCount: aws.Int32(w.desired)}}}, nil
	}
	w.sm.UpdateEndpointWeightsAndCapacitiesFn = func(_ context.Context, in *sagemaker.UpdateEndpointWeightsAndCapacitiesInput, _ ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointWeightsAndCapacitiesOutput, error) {
		w.calls = append(w.calls, "UpdateEndpointWeightsAndCapacities")
		if w.failUpdate != nil {
			return nil, w.failUpdate
		}
		w.desired = aws.ToInt32(in.DesiredWeightsAndCapacities[0].DesiredInstanceCount)
		w.updating = 2
		return &sagemaker.UpdateEndpointWeightsAndCapacitiesOutput{}, nil
	}
	w.aas.DescribeScalableTargetsFn = func(context.Context, *applicationautoscaling.DescribeScalableTargetsInput, ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalableTargetsOutput, error) {
		w.calls = append(w.calls, "DescribeScalableTargets")
		if w.target == nil {
			return &applicationautoscaling.DescribeScalableTargetsOutput{}, nil
		}
		t := *w.target
		return &applicationautoscaling.DescribeScalableTargetsOutput{ScalableTargets: []aastypes.ScalableTarget{t}}, nil
	}
	w.aas.RegisterScalableTargetFn = func(_ context.Context, in *applicationautoscaling.RegisterScalableTargetInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.RegisterScalableTargetOutput, error) {
		w.calls = append(w.calls, "RegisterScalableTarget")
		if w.failRegister != nil {
			return nil, w.failRegister
		}
		if w.target == nil {
			w.target = &aastypes.ScalableTarget{ResourceId: in.ResourceId}
		}
		w.target.MinCapacity, w.target.MaxCapacity = in.MinCapacity, in.MaxCapacity
		s := *in.SuspendedState
		w.target.SuspendedState = &s
		return &applicationautoscaling.RegisterScalableTargetOutput{}, nil
	}
	return w
}

func (w *world) clients() cloud.FreezeClients {
	return cloud.FreezeClients{SageMaker: &w.sm, AutoScaling: &w.aas}
}

func (w *world) suspension() cloud.Suspension {
	s := w.target.SuspendedState
	return cloud.Suspension{DynamicIn: aws.ToBool(s.DynamicScalingInSuspended), DynamicOut: aws.ToBool(s.DynamicScalingOutSuspended), Scheduled: aws.ToBool(s.ScheduledScalingSuspended)}
}

func target(minC, maxC int32, s cloud.Suspension) *aastypes.ScalableTarget {
	return &aastypes.ScalableTarget{ResourceId: aws.String("endpoint/" + worldEndpoint + "/variant/" + worldVariant), MinCapacity: aws.Int32(minC), MaxCapacity: aws.Int32(maxC),
		SuspendedState: &aastypes.SuspendedState{DynamicScalingInSuspended: aws.Bool(s.DynamicIn), DynamicScalingOutSuspended: aws.Bool(s.DynamicOut), ScheduledScalingSuspended: aws.Bool(s.Scheduled)}}
}

func freezeOptions(dir string) cloud.FreezeOptions {
	return cloud.FreezeOptions{JournalDir: dir, Endpoint: worldEndpoint, Variant: worldVariant, Instances: 1, RunID: "run-1", Command: "tts-bench qmax", Wait: fast}
}

// Freeze journals the state before touching anything, then suspends, pins the bounds and the count; Restore
// puts back exactly the journaled state (bounds, scheduled scaling suspended as it was, count) and deletes the
// journal; a second Thaw changes nothing.
func TestFreezeRestoreWithTarget(t *testing.T) {
	dir := t.TempDir()
	before := cloud.Suspension{Scheduled: true}
	w := newWorld(3, target(2, 5, before))
	fr, err := cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	j := fr.Journal
	if !j.TargetExisted || j.MinCapacity != 2 || j.MaxCapacity != 5 || j.DesiredInstanceCount != 3 || j.Suspended != before || j.RunID != "run-1" || j.PID != os.Getpid() {
		t.Fatalf("journal = %+v", j)
	}
	onDisk, err := cloud.ReadJournal(filepath.Join(dir, worldEndpoint+".json"))
	if err != nil || *onDisk != *j {
		t.Fatalf("journal on disk = %+v, %v; want %+v", onDisk, err, j)
	}
	// The journal was written before the first change: the first write call (the marker) comes after the reads
	// only.
	if got := strings.Join(w.calls[:4], ","); got != "DescribeEndpoint,ListTags,DescribeScalableTargets,AddTags" {
		t.Fatalf("first calls = %s", got)
	}
	if w.desired != 1 || aws.ToInt32(w.target.MinCapacity) != 1 || aws.ToInt32(w.target.MaxCapacity) != 1 || w.suspension() != (cloud.Suspension{DynamicIn: true, DynamicOut: true, Scheduled: true}) {
		t.Fatalf("after freeze: desired %d, target %+v", w.desired, w.target)
	}

	// A second freeze of the same endpoint is refused before any call.
	w.calls = nil
	if _, err := cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir)); !errors.Is(err, cloud.ErrJournalExists) || !strings.Contains(err.Error(), "tts-bench thaw --endpoint "+worldEndpoint) {
		t.Fatalf("second freeze = %v, want ErrJournalExists naming thaw", err)
	}
	if len(w.calls) != 0 {
		t.Fatalf("a refused freeze made calls: %v", w.calls)
	}

	res, err := cloud.Restore(t.Context(), w.clients(), fr.Path, fast)
	if err != nil {
		t.Fatal(err)
	}
	if w.desired != 3 || aws.ToInt32(w.target.MinCapacity) != 2 || aws.ToInt32(w.target.MaxCapacity) != 5 || w.suspension() != before {
		t.Fatalf("after restore: desired %d, target %+v", w.desired, w.target)
	}
	if !res.JournalRemoved || len(res.Changes) != 5 || !strings.HasPrefix(res.Changes[4], "removed the measurement marker of this run (run run-1 by ") {
		t.Fatalf("restore result = %+v; want 5 changes (min, max, suspension, count, marker) and the journal removed", res)
	}
	if len(w.tags) != 0 {
		t.Fatalf("tags after restore = %v, want none", w.tags)
	}
	if _, err := os.Stat(fr.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("journal still there: %v", err)
	}
	// Restore again: no journal is an error (nothing to restore from); thaw instead changes nothing.
	if _, err := cloud.Restore(t.Context(), w.clients(), fr.Path, fast); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("restore without a journal = %v", err)
	}
	th, err := cloud.Thaw(t.Context(), w.clients(), cloud.ThawOptions{JournalDir: dir, Endpoint: worldEndpoint, Variant: worldVariant, Wait: fast})
	if err != nil || th.Journal != nil {
		t.Fatalf("thaw = %+v, %v", th, err)
	}
	// Without a journal thaw unsuspends everything, the scheduled suspension the endpoint had before included,
	// and names the change.
	if len(th.Changes) != 1 || !strings.Contains(th.Changes[0], "suspended scheduled scaling → nothing") {
		t.Fatalf("thaw changes = %v", th.Changes)
	}
	th, err = cloud.Thaw(t.Context(), w.clients(), cloud.ThawOptions{JournalDir: dir, Endpoint: worldEndpoint, Variant: worldVariant, Wait: fast})
	if err != nil || len(th.Changes) != 0 {
		t.Fatalf("second thaw = %+v, %v; want no changes", th, err)
	}
}

// Without a target only the count is pinned and restored; no RegisterScalableTarget is made.
func TestFreezeRestoreWithoutTarget(t *testing.T) {
	dir := t.TempDir()
	w := newWorld(2, nil)
	fr, err := cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	if fr.Journal.TargetExisted || w.desired != 1 || w.target != nil {
		t.Fatalf("journal %+v, desired %d, target %v", fr.Journal, w.desired, w.target)
	}
	res, err := cloud.Restore(t.Context(), w.clients(), fr.Path, fast)
	if err != nil || w.desired != 2 || len(res.Changes) != 2 || res.Changes[0] != "instance count 1 → 2" {
		t.Fatalf("restore = %+v, %v, desired %d", res, err, w.desired)
	}
	for _, c := range w.calls {
		if c == "RegisterScalableTarget" {
			t.Fatal("RegisterScalableTarget called without a target")
		}
	}
}

// An endpoint that is not InService is refused before a journal is written.
func TestFreezeRefusesEndpointNotInService(t *testing.T) {
	dir := t.TempDir()
	w := newWorld(1, nil)
	w.status = smtypes.EndpointStatusUpdating
	if _, err := cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir)); err == nil || !strings.Contains(err.Error(), "not InService") {
		t.Fatalf("freeze = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("files left: %v", entries)
	}
}

// A freeze that fails after the journal is written puts the endpoint back and deletes the journal; when that
// fails too, the journal stays for thaw and both errors are returned.
func TestFreezeFailureRestores(t *testing.T) {
	dir := t.TempDir()
	w := newWorld(2, target(1, 4, cloud.Suspension{}))
	w.failUpdate = errors.New("throttled")
	_, err := cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir))
	if err == nil || !strings.Contains(err.Error(), "throttled") {
		t.Fatalf("freeze = %v", err)
	}
	if w.desired != 2 || aws.ToInt32(w.target.MinCapacity) != 1 || aws.ToInt32(w.target.MaxCapacity) != 4 || w.suspension().Any() {
		t.Fatalf("not put back: desired %d, target %+v", w.desired, w.target)
	}
	if _, err := os.Stat(filepath.Join(dir, worldEndpoint+".json")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("journal left after a successful put-back: %v", err)
	}

	w = newWorld(2, target(1, 4, cloud.Suspension{}))
	w.failUpdate = errors.New("throttled")
	calls := 0
	reg := w.aas.RegisterScalableTargetFn
	w.aas.RegisterScalableTargetFn = func(ctx context.Context, in *applicationautoscaling.RegisterScalableTargetInput, o ...func(*applicationautoscaling.Options)) (*applicationautoscaling.RegisterScalableTargetOutput, error) {
		if calls++; calls > 1 {
			return nil, errors.New("access denied")
		}
		return reg(ctx, in, o...)
	}
	_, err = cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir))
	if err == nil || !strings.Contains(err.Error(), "throttled") || !strings.Contains(err.Error(), "access denied") || !strings.Contains(err.Error(), "journal") {
		t.Fatalf("freeze = %v", err)
	}
	j, err := cloud.ReadJournal(filepath.Join(dir, worldEndpoint+".json"))
	if err != nil || j.DesiredInstanceCount != 2 || j.MaxCapacity != 4 {
		t.Fatalf("journal = %+v, %v", j, err)
	}
}

// Restore waits out an update in progress, and keeps the journal when a step fails.
func TestRestoreWaitsAndKeepsJournalOnFailure(t *testing.T) {
	dir := t.TempDir()
	w := newWorld(2, target(1, 4, cloud.Suspension{}))
	fr, err := cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	w.updating = 3
	w.failRegister = errors.New("service unavailable")
	if _, err := cloud.Restore(t.Context(), w.clients(), fr.Path, fast); err == nil || !strings.Contains(err.Error(), "the journal stays") {
		t.Fatalf("restore = %v", err)
	}
	if w.updating != 0 {
		t.Fatalf("restore did not wait out Updating (%d left)", w.updating)
	}
	if _, err := os.Stat(fr.Path); err != nil {
		t.Fatalf("journal gone after a failed restore: %v", err)
	}
	w.failRegister = nil
	if _, err := cloud.Restore(t.Context(), w.clients(), fr.Path, fast); err != nil {
		t.Fatal(err)
	}
	if w.desired != 2 || aws.ToInt32(w.target.MaxCapacity) != 4 || w.suspension().Any() {
		t.Fatalf("after restore: desired %d, target %+v", w.desired, w.target)
	}
}

// A target deregistered since the freeze is not registered again, and one registered since (none before) is
// left alone; both are named.
func TestRestoreTargetChangedSinceFreeze(t *testing.T) {
	dir := t.TempDir()
	w := newWorld(2, target(1, 4, cloud.Suspension{}))
	fr, err := cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	w.target = nil
	res, err := cloud.Restore(t.Context(), w.clients(), fr.Path, fast)
	if err != nil || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "deregistered since the freeze") || w.target != nil || w.desired != 2 {
		t.Fatalf("restore = %+v, %v", res, err)
	}

	w = newWorld(2, nil)
	fr, err = cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	w.target = target(1, 1, cloud.Suspension{DynamicIn: true})
	res, err = cloud.Restore(t.Context(), w.clients(), fr.Path, fast)
	if err != nil || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "registered for") || w.suspension() != (cloud.Suspension{DynamicIn: true}) {
		t.Fatalf("restore = %+v, %v", res, err)
	}
}

// Thaw without a journal unsuspends and sets the given bounds; --desired sets the count within them and is
// refused outside them.
func TestThawWithoutJournal(t *testing.T) {
	dir := t.TempDir()
	w := newWorld(1, target(1, 1, cloud.Suspension{DynamicIn: true, DynamicOut: true}))
	two := int32(2)
	o := cloud.ThawOptions{JournalDir: dir, Endpoint: worldEndpoint, Variant: worldVariant, Bounds: &cloud.Bounds{Min: 1, Max: 4, Source: "the catalog"}, Desired: &two, Wait: fast}
	res, err := cloud.Thaw(t.Context(), w.clients(), o)
	if err != nil {
		t.Fatal(err)
	}
	if w.suspension().Any() || aws.ToInt32(w.target.MaxCapacity) != 4 || w.desired != 2 {
		t.Fatalf("after thaw: desired %d, target %+v", w.desired, w.target)
	}
	want := "maximum capacity 1 → 4|suspended dynamic scale-in, dynamic scale-out → nothing|bounds from the catalog|instance count 1 → 2"
	if got := strings.Join(res.Changes, "|"); got != want {
		t.Fatalf("changes = %s, want %s", got, want)
	}
	if res, err = cloud.Thaw(t.Context(), w.clients(), o); err != nil || len(res.Changes) != 0 {
		t.Fatalf("second thaw = %+v, %v", res, err)
	}
	nine := int32(9)
	o.Desired = &nine
	if _, err := cloud.Thaw(t.Context(), w.clients(), o); err == nil || !strings.Contains(err.Error(), "outside the target's bounds 1–4") {
		t.Fatalf("thaw --desired 9 = %v", err)
	}
	if w.desired != 2 {
		t.Fatalf("count changed by a refused thaw: %d", w.desired)
	}

	// No target at all: nothing to unsuspend, said as a note.
	w = newWorld(1, nil)
	res, err = cloud.Thaw(t.Context(), w.clients(), cloud.ThawOptions{JournalDir: dir, Endpoint: worldEndpoint, Variant: worldVariant, Wait: fast})
	if err != nil || len(res.Changes) != 0 || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "no scalable target") {
		t.Fatalf("thaw without target = %+v, %v", res, err)
	}
}

// Bad options, endpoint names that would leave the journal directory and damaged journals are refused with
// what to do.
func TestJournalInputs(t *testing.T) {
	if _, err := cloud.JournalPath("j", "../etc/passwd"); err == nil || !strings.Contains(err.Error(), "not a SageMaker endpoint name") {
		t.Fatalf("JournalPath(../etc/passwd) = %v", err)
	}
	o := freezeOptions("")
	o.Endpoint, o.Variant, o.Instances = "", "", 0
	err := o.Validate()
	for _, want := range []string{"endpoint name", "variant", "instances to pin"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, worldEndpoint+".json")
	for name, body := range map[string]string{
		"unknown field": `{"schema_version":1,"endpoint":"speech-espeak-ng","variant":"AllTraffic","run_id":"","pid":1,"command":"","created":"2026-01-01T00:00:00Z","desired_instance_count":1,"target_existed":false,"min_capacity":0,"max_capacity":0,"suspended":{"dynamic_scaling_in_suspended":false,"dynamic_scaling_out_suspended":false,"scheduled_scaling_suspended":false},"extra":1}`,
		"wrong schema":  `{"schema_version":2,"endpoint":"speech-espeak-ng","variant":"AllTraffic","run_id":"","pid":1,"command":"","created":"2026-01-01T00:00:00Z","desired_instance_count":1,"target_existed":false,"min_capacity":0,"max_capacity":0,"suspended":{"dynamic_scaling_in_suspended":false,"dynamic_scaling_out_suspended":false,"scheduled_scaling_suspended":false}}`,
		"other name":    `{"schema_version":1,"endpoint":"speech-other","variant":"AllTraffic","run_id":"","pid":1,"command":"","created":"2026-01-01T00:00:00Z","desired_instance_count":1,"target_existed":false,"min_capacity":0,"max_capacity":0,"suspended":{"dynamic_scaling_in_suspended":false,"dynamic_scaling_out_suspended":false,"scheduled_scaling_suspended":false}}`,
		"bad bounds":    `{"schema_version":1,"endpoint":"speech-espeak-ng","variant":"AllTraffic","run_id":"","pid":1,"command":"","created":"2026-01-01T00:00:00Z","desired_instance_count":1,"target_existed":true,"min_capacity":3,"max_capacity":2,"suspended":{"dynamic_scaling_in_suspended":false,"dynamic_scaling_out_suspended":false,"scheduled_scaling_suspended":false}}`,
		"not json":      `{"schema_version":`,
	} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := cloud.ReadJournal(path); err == nil || !strings.Contains(err.Error(), "tts-bench thaw") {
			t.Errorf("%s: ReadJournal = %v, want a refusal naming thaw", name, err)
		}
	}
}
