package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/strictjson"
	"github.com/speech-infra/speech-infra/models"
)

// DefaultJournalDir is where the commands keep freeze journals: one file per endpoint, <dir>/<endpoint>.json
// (JournalPath). A journal exists from the moment a measurement starts changing an endpoint until it has put
// the endpoint back; one left behind (kill -9, a crash, a lost network) is what tts-bench drift reports and
// tts-bench thaw restores from.
var DefaultJournalDir = filepath.Join(".state", "journals")

// JournalSchemaVersion is the schema version of the journal file.
const JournalSchemaVersion = 1

// maxJournalBytes bounds reading a journal.
const maxJournalBytes = 64 << 10

// Journal is what an endpoint variant looked like before Freeze changed it: enough to put it back exactly.
type Journal struct {
	// SchemaVersion is JournalSchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// Endpoint and Variant name the frozen variant.
	Endpoint string `json:"endpoint"`
	Variant  string `json:"variant"`
	// RunID identifies the run that froze it; PID is its process id and Command its command line.
	RunID   string `json:"run_id"`
	PID     int    `json:"pid"`
	Command string `json:"command"`
	// Created is when the journal was written (UTC).
	Created time.Time `json:"created"`
	// DesiredInstanceCount is the variant's desired instance count before the freeze.
	DesiredInstanceCount int32 `json:"desired_instance_count"`
	// TargetExisted says whether a scalable target was registered for the variant; the bounds and the
	// suspension below are meaningful only when it was.
	TargetExisted bool `json:"target_existed"`
	// MinCapacity and MaxCapacity are the target's bounds before the freeze.
	MinCapacity int32 `json:"min_capacity"`
	MaxCapacity int32 `json:"max_capacity"`
	// Suspended is the target's SuspendedState before the freeze.
	Suspended Suspension `json:"suspended"`
}

// Suspension is a scalable target's SuspendedState.
type Suspension struct {
	// DynamicIn, DynamicOut and Scheduled are DynamicScalingInSuspended, DynamicScalingOutSuspended and
	// ScheduledScalingSuspended.
	DynamicIn  bool `json:"dynamic_scaling_in_suspended"`
	DynamicOut bool `json:"dynamic_scaling_out_suspended"`
	Scheduled  bool `json:"scheduled_scaling_suspended"`
}

// Any reports whether any kind of scaling is suspended.
func (s Suspension) Any() bool { return s.DynamicIn || s.DynamicOut || s.Scheduled }

// String names what is suspended, e.g. "dynamic scale-in, dynamic scale-out", or "nothing".
func (s Suspension) String() string {
	var parts []string
	if s.DynamicIn {
		parts = append(parts, "dynamic scale-in")
	}
	if s.DynamicOut {
		parts = append(parts, "dynamic scale-out")
	}
	if s.Scheduled {
		parts = append(parts, "scheduled scaling")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// sdk is the SuspendedState the SDK sends: every field set, so the target ends up exactly as s says
// (Application Auto Scaling keeps the value of an omitted field).
func (s Suspension) sdk() *aastypes.SuspendedState {
	return &aastypes.SuspendedState{DynamicScalingInSuspended: aws.Bool(s.DynamicIn), DynamicScalingOutSuspended: aws.Bool(s.DynamicOut),
		ScheduledScalingSuspended: aws.Bool(s.Scheduled)}
}

// suspensionOf reads a target's SuspendedState; an absent state or field means not suspended.
func suspensionOf(s *aastypes.SuspendedState) Suspension {
	if s == nil {
		return Suspension{}
	}
	return Suspension{DynamicIn: aws.ToBool(s.DynamicScalingInSuspended), DynamicOut: aws.ToBool(s.DynamicScalingOutSuspended),
		Scheduled: aws.ToBool(s.ScheduledScalingSuspended)}
}

// endpointNameRE is SageMaker's endpoint name pattern; it also keeps a journal path inside its directory.
var endpointNameRE = regexp.MustCompile(`^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$`)

// JournalPath is the journal file of an endpoint in dir: <dir>/<endpoint>.json. An endpoint name that
// SageMaker would not accept (and that could leave dir, such as "../x") is refused.
func JournalPath(dir, endpoint string) (string, error) {
	if !endpointNameRE.MatchString(endpoint) {
		return "", fmt.Errorf("endpoint name %q: not a SageMaker endpoint name (letters, digits and inner hyphens, at most 63): give the endpoint's name, e.g. speech-espeak-ng", endpoint)
	}
	if dir == "" {
		return "", errors.New("journal directory: empty: give a directory, or leave it out for " + DefaultJournalDir)
	}
	return filepath.Join(dir, endpoint+".json"), nil
}

// ErrJournalExists says a journal for the endpoint is already there: an earlier run did not put the endpoint
// back (or another run is measuring it now).
var ErrJournalExists = errors.New("a freeze journal already exists")

// ErrJournalInvalid says a journal does not parse or holds values no run writes (an input error).
var ErrJournalInvalid = errors.New("not a valid freeze journal")

// ReadJournal reads and checks the journal at path. A missing file is an error wrapping fs.ErrNotExist.
func ReadJournal(path string) (*Journal, error) {
	b, err := strictjson.ReadFile(path, maxJournalBytes)
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", path, err)
	}
	var j Journal
	if problems := strictjson.Decode(b, &j, "not part of a journal", "a freeze journal"); len(problems) > 0 {
		return nil, fmt.Errorf("read journal %s: %w: %s: restore the endpoint by hand (tts-bench thaw without the journal), then delete the file", path, ErrJournalInvalid, strings.Join(problems, "; "))
	}
	var problems []string
	if j.SchemaVersion != JournalSchemaVersion {
		problems = append(problems, fmt.Sprintf("schema_version is %d, want %d", j.SchemaVersion, JournalSchemaVersion))
	}
	if !endpointNameRE.MatchString(j.Endpoint) {
		problems = append(problems, fmt.Sprintf("endpoint %q is not an endpoint name", j.Endpoint))
	} else if want := j.Endpoint + ".json"; filepath.Base(path) != want {
		problems = append(problems, fmt.Sprintf("it names endpoint %s but the file is not called %s", j.Endpoint, want))
	}
	if j.Variant == "" {
		problems = append(problems, "variant is empty")
	}
	// The counts are bounded as thaw's --desired is (models.MaxInstances): a journal is sent to the API as it
	// stands, and an edited or corrupt one must not ask for a million instances.
	if j.DesiredInstanceCount < 1 || j.DesiredInstanceCount > models.MaxInstances {
		problems = append(problems, fmt.Sprintf("desired_instance_count is %d, want 1 to %d", j.DesiredInstanceCount, models.MaxInstances))
	}
	if j.TargetExisted && (j.MinCapacity < 0 || j.MaxCapacity < 1 || j.MinCapacity > j.MaxCapacity || j.MaxCapacity > models.MaxInstances) {
		problems = append(problems, fmt.Sprintf("min_capacity %d and max_capacity %d are not bounds (0 ≤ min ≤ max, 1 ≤ max ≤ %d)", j.MinCapacity, j.MaxCapacity, models.MaxInstances))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("read journal %s: %w: %s: restore the endpoint by hand (tts-bench thaw without the journal), then delete the file", path, ErrJournalInvalid, strings.Join(problems, "; "))
	}
	return &j, nil
}

// createJournal writes j to path atomically and exclusively (atomicfile.CreateNew): the journal is written
// and synced under a temporary name, then linked to path, which fails when path exists. A reader (or a
// crash) sees no journal or the whole journal; of two runs racing to freeze one endpoint, exactly one gets
// it.
func createJournal(path string, j *Journal) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create journal directory %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("encode journal: %w", err)
	}
	if err := atomicfile.CreateNew(path, append(b, '\n'), 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w at %s", ErrJournalExists, path)
		}
		return fmt.Errorf("the journal: %w", err)
	}
	return nil
}

// removeJournal deletes the journal at path and syncs its directory; a missing journal is no error.
func removeJournal(path string) error {
	if err := atomicfile.Remove(path); err != nil {
		return fmt.Errorf("remove journal %s: %w: delete it by hand once the endpoint is as it recorded", path, err)
	}
	return nil
}

// FreezeEndpointAPI is the part of the SageMaker client Freeze and Restore use.
type FreezeEndpointAPI interface {
	DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error)
	UpdateEndpointWeightsAndCapacities(ctx context.Context, in *sagemaker.UpdateEndpointWeightsAndCapacitiesInput, optFns ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointWeightsAndCapacitiesOutput, error)
	// MarkerAPI reads, writes and removes the measurement marker (ListTags, AddTags, DeleteTags).
	MarkerAPI
}

// FreezeScalingAPI is the part of the Application Auto Scaling client Freeze and Restore use.
type FreezeScalingAPI interface {
	DescribeScalableTargets(ctx context.Context, in *applicationautoscaling.DescribeScalableTargetsInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalableTargetsOutput, error)
	RegisterScalableTarget(ctx context.Context, in *applicationautoscaling.RegisterScalableTargetInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.RegisterScalableTargetOutput, error)
}

// FreezeClients are the clients Freeze and Restore work through (the SDK's *sagemaker.Client and
// *applicationautoscaling.Client satisfy them).
type FreezeClients struct {
	// SageMaker reads the endpoint and sets its instance count.
	SageMaker FreezeEndpointAPI
	// AutoScaling reads and registers the scalable target.
	AutoScaling FreezeScalingAPI
}

// FreezeOptions say what Freeze freezes and where it keeps the journal.
type FreezeOptions struct {
	// JournalDir holds the journal (DefaultJournalDir in the commands).
	JournalDir string
	// Endpoint and Variant name the variant to freeze.
	Endpoint, Variant string
	// Instances is the instance count to pin (qmax pins 1).
	Instances int32
	// RunID, PID and Command are recorded in the journal (PID 0 means this process).
	RunID   string
	PID     int
	Command string
	// Wait bounds each wait for the endpoint to be InService.
	Wait WaitOptions
	// Owner is the marker's user@host (empty: CurrentOwner).
	Owner string
	// Duration is the run's planned duration bound: the marker expires MarkerMargin after it (0:
	// DefaultMarkerDuration).
	Duration time.Duration
	// OverrideExpired lets the freeze replace another run's expired marker (--force). A live marker and
	// suspended scaling are refused all the same.
	OverrideExpired bool
}

// Validate reports every problem of the options at once.
func (o FreezeOptions) Validate() error {
	var errs []error
	if _, err := JournalPath(o.JournalDir, o.Endpoint); err != nil {
		errs = append(errs, err)
	}
	if o.Variant == "" {
		errs = append(errs, errors.New("variant: empty: give the production variant (AllTraffic)"))
	}
	if o.Instances < 1 {
		errs = append(errs, fmt.Errorf("instances to pin: %d: give at least 1", o.Instances))
	}
	if !markerFieldRE.MatchString(o.RunID) {
		errs = append(errs, fmt.Errorf("run id %q: want 1 to %d letters, digits or _ . : / = + - @ (it goes into the endpoint's marker tag)", o.RunID, maxMarkerField))
	}
	if o.Owner != "" && !markerFieldRE.MatchString(o.Owner) {
		errs = append(errs, fmt.Errorf("owner %q: want 1 to %d letters, digits or _ . : / = + - @", o.Owner, maxMarkerField))
	}
	if o.Duration < 0 {
		errs = append(errs, fmt.Errorf("planned duration %s: negative", o.Duration))
	}
	if err := o.Wait.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Frozen is a variant Freeze froze: its journal and where it is.
type Frozen struct {
	// Journal is the state before the freeze.
	Journal *Journal
	// Path is the journal file.
	Path string
	// Marker is the measurement marker the freeze wrote on the endpoint.
	Marker Marker
	// Overridden is another run's expired marker the freeze replaced (OverrideExpired), nil when none.
	Overridden *FoundMarker
}

// Freeze records the variant's scaling state in a journal and then holds the variant still for a
// measurement:
//
//  1. it refuses when a journal for the endpoint exists (ErrJournalExists: run tts-bench thaw), or the
//     endpoint is not InService;
//  2. it reads the endpoint's measurement marker (ListTags) and refuses (ErrEndpointInUse) another run's
//     marker, live, unreadable, or expired without OverrideExpired;
//  3. it reads the desired instance count and the scalable target (bounds, SuspendedState) and refuses
//     (ErrEndpointInUse) a target whose dynamic scaling is suspended unless the endpoint carries this run's
//     marker: another measurement froze it, and a journal of that state would restore it frozen;
//  4. it writes the journal (atomically, exclusively) before changing anything, then the marker (AddTags:
//     run id, owner, pid, start, expiry = now + Duration + MarkerMargin) and reads it back: a run that lost a
//     race for the tag stops there;
//  5. with a target: RegisterScalableTarget with every kind of scaling suspended and the bounds pinned to
//     Instances (so that nothing, not even the bounds, moves the count);
//  6. UpdateEndpointWeightsAndCapacities to Instances when the count differs, then waits for InService
//     (SDK waiter, bounded by Wait); last it reads the marker once more and gives up (restoring) when it is
//     no longer this run's.
//
// A failure after the journal is written is followed by Restore (which removes this run's marker); when that
// fails too, the journal stays for tts-bench thaw and both errors are returned. The caller restores with
// Restore at the end, on error and on SIGINT / SIGTERM.
func Freeze(ctx context.Context, cl FreezeClients, o FreezeOptions) (*Frozen, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	path, _ := JournalPath(o.JournalDir, o.Endpoint)
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("freeze %s: %w at %s: an earlier run did not put the endpoint back (or one is running): run tts-bench thaw --endpoint %s",
			o.Endpoint, ErrJournalExists, path, o.Endpoint)
	}
	d, err := cl.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(o.Endpoint)})
	if err != nil {
		return nil, fmt.Errorf("freeze %s: describe endpoint: %w", o.Endpoint, err)
	}
	if d.EndpointStatus != smtypes.EndpointStatusInService {
		return nil, fmt.Errorf("freeze %s: the endpoint is %s, not InService: wait for it (or fix it) and run again", o.Endpoint, d.EndpointStatus)
	}
	desired, err := variantDesired(d, o.Variant)
	if err != nil {
		return nil, fmt.Errorf("freeze %s: %w", o.Endpoint, err)
	}
	arn := aws.ToString(d.EndpointArn)
	found, err := ReadMarker(ctx, cl.SageMaker, arn)
	if err != nil {
		return nil, fmt.Errorf("freeze %s: %w", o.Endpoint, err)
	}
	overridden, err := markerCheck(found, o, time.Now())
	if err != nil {
		return nil, err
	}
	target, err := describeTarget(ctx, cl.AutoScaling, o.Endpoint, o.Variant)
	if err != nil {
		return nil, fmt.Errorf("freeze %s: %w", o.Endpoint, err)
	}
	if target != nil && !found.Of(o.RunID) {
		if s := suspensionOf(target.SuspendedState); s.DynamicIn || s.DynamicOut {
			return nil, fmt.Errorf("freeze %s: %w: the scaling of %s is already suspended (%s, capacity %d–%d) and the endpoint carries no marker of this run: "+
				"another measurement (from another journal directory or machine) or an interrupted one froze it; a measurement now would measure under its pin, and its restore would put back a frozen state. "+
				"Run tts-bench thaw --endpoint %s where that run's journal is (elsewhere with --force: it unsuspends scaling and removes any marker), then run again. --force does not override this",
				o.Endpoint, ErrEndpointInUse, aws.ToString(target.ResourceId), s, aws.ToInt32(target.MinCapacity), aws.ToInt32(target.MaxCapacity), o.Endpoint)
		}
	}
	pid := o.PID
	if pid == 0 {
		pid = os.Getpid()
	}
	j := &Journal{SchemaVersion: JournalSchemaVersion, Endpoint: o.Endpoint, Variant: o.Variant, RunID: o.RunID, PID: pid, Command: o.Command,
		Created: time.Now().UTC(), DesiredInstanceCount: desired}
	if target != nil {
		j.TargetExisted = true
		j.MinCapacity, j.MaxCapacity = aws.ToInt32(target.MinCapacity), aws.ToInt32(target.MaxCapacity)
		j.Suspended = suspensionOf(target.SuspendedState)
	}
	if err := createJournal(path, j); err != nil {
		if errors.Is(err, ErrJournalExists) {
			return nil, fmt.Errorf("freeze %s: %w: run tts-bench thaw --endpoint %s", o.Endpoint, err, o.Endpoint)
		}
		return nil, fmt.Errorf("freeze %s: %w", o.Endpoint, err)
	}
	fr := &Frozen{Journal: j, Path: path, Overridden: overridden}
	owner := o.Owner
	if owner == "" {
		owner = CurrentOwner()
	}
	dur := o.Duration
	if dur == 0 {
		dur = DefaultMarkerDuration
	}
	start := time.Now().UTC().Truncate(time.Second)
	fr.Marker = Marker{RunID: o.RunID, Owner: owner, PID: pid, Started: start, Expires: start.Add(dur + MarkerMargin)}
	if err := claimMarker(ctx, cl.SageMaker, arn, fr.Marker, o); err != nil {
		// Nothing of the endpoint has changed but, perhaps, the tag: the journal goes, and the marker with it
		// when it is this run's.
		_, _, merr := clearMarker(ctx, cl.SageMaker, arn, o.RunID, false)
		return nil, errors.Join(err, merr, removeJournal(path))
	}
	err = pin(ctx, cl, o, target != nil)
	if err == nil {
		// The last check: a run that wrote its marker over this one's while this one pinned raced it. Both
		// stop (that run finds the pin and refuses); this one puts the endpoint back.
		f, rerr := ReadMarker(ctx, cl.SageMaker, arn)
		switch {
		case rerr != nil:
			err = rerr
		case !f.Of(o.RunID):
			what := "no marker"
			if f != nil {
				what = f.Describe(time.Now())
			}
			err = fmt.Errorf("%w: the marker of this run was replaced while it froze the endpoint (now %s): two measurements raced; this one puts the endpoint back and stops", ErrEndpointInUse, what)
		}
	}
	if err == nil {
		return fr, nil
	}
	err = fmt.Errorf("freeze %s: %w", o.Endpoint, err)
	if _, rerr := Restore(ctx, cl, fr.Path, o.Wait); rerr != nil {
		return nil, errors.Join(err, fmt.Errorf("put %s back after the failed freeze: %w: the journal %s stays: run tts-bench thaw --endpoint %s", o.Endpoint, rerr, path, o.Endpoint))
	}
	return nil, err
}

// claimMarker writes the run's marker and reads it back: when another run's marker is there instead, the two
// raced for the endpoint and this one stops.
func claimMarker(ctx context.Context, api MarkerAPI, arn string, m Marker, o FreezeOptions) error {
	if err := writeMarker(ctx, api, arn, m); err != nil {
		return fmt.Errorf("freeze %s: %w", o.Endpoint, err)
	}
	f, err := ReadMarker(ctx, api, arn)
	if err != nil {
		return fmt.Errorf("freeze %s: %w", o.Endpoint, err)
	}
	if !f.Of(o.RunID) {
		what := "no marker"
		if f != nil {
			what = f.Describe(time.Now())
		}
		return fmt.Errorf("freeze %s: %w: the marker this run wrote was replaced at once (now %s): another measurement is starting on the endpoint", o.Endpoint, ErrEndpointInUse, what)
	}
	return nil
}

// pin suspends the target's scaling with its bounds at o.Instances (when there is a target) and sets the
// instance count.
func pin(ctx context.Context, cl FreezeClients, o FreezeOptions, hasTarget bool) error {
	if hasTarget {
		if _, err := cl.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
			ServiceNamespace: aastypes.ServiceNamespace(capacity.ServiceNamespace), ResourceId: aws.String(capacity.ResourceID(o.Endpoint, o.Variant)),
			ScalableDimension: aastypes.ScalableDimension(capacity.ScalableDimension),
			MinCapacity:       aws.Int32(o.Instances), MaxCapacity: aws.Int32(o.Instances),
			SuspendedState: allSuspended.sdk(),
		}); err != nil {
			return fmt.Errorf("suspend scaling: %w", err)
		}
	}
	_, err := setDesired(ctx, cl.SageMaker, o.Endpoint, o.Variant, o.Instances, o.Wait)
	return err
}

// setDesired waits for the endpoint to be InService, sets the variant's desired count when it differs and
// waits for InService again; it reports whether it changed the count.
func setDesired(ctx context.Context, api FreezeEndpointAPI, endpoint, variant string, n int32, wait WaitOptions) (bool, error) {
	d, err := WaitInService(ctx, api, endpoint, wait)
	if err != nil {
		return false, err
	}
	cur, err := variantDesired(d, variant)
	if err != nil {
		return false, err
	}
	if cur == n {
		return false, nil
	}
	if _, err := api.UpdateEndpointWeightsAndCapacities(ctx, &sagemaker.UpdateEndpointWeightsAndCapacitiesInput{
		EndpointName:                aws.String(endpoint),
		DesiredWeightsAndCapacities: []smtypes.DesiredWeightAndCapacity{{VariantName: aws.String(variant), DesiredInstanceCount: aws.Int32(n)}},
	}); err != nil {
		return false, fmt.Errorf("set the instance count of %s to %d: %w", endpoint, n, err)
	}
	if _, err := WaitInService(ctx, api, endpoint, wait); err != nil {
		return true, err
	}
	return true, nil
}

// variantDesired is the variant's desired instance count (its current count when the desired one is not
// reported).
func variantDesired(d *sagemaker.DescribeEndpointOutput, variant string) (int32, error) {
	for _, v := range d.ProductionVariants {
		if aws.ToString(v.VariantName) != variant {
			continue
		}
		if v.DesiredInstanceCount != nil {
			return *v.DesiredInstanceCount, nil
		}
		if v.CurrentInstanceCount != nil {
			return *v.CurrentInstanceCount, nil
		}
		return 0, fmt.Errorf("variant %s reports no instance count", variant)
	}
	return 0, fmt.Errorf("endpoint %s has no variant %s: check the variant name (AllTraffic)", aws.ToString(d.EndpointName), variant)
}

// targetReadAPI reads scalable targets.
type targetReadAPI interface {
	DescribeScalableTargets(ctx context.Context, in *applicationautoscaling.DescribeScalableTargetsInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalableTargetsOutput, error)
}

// describeTarget returns the variant's scalable target, or nil when none is registered.
func describeTarget(ctx context.Context, api targetReadAPI, endpoint, variant string) (*aastypes.ScalableTarget, error) {
	rid := capacity.ResourceID(endpoint, variant)
	out, err := api.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{
		ServiceNamespace: aastypes.ServiceNamespace(capacity.ServiceNamespace), ResourceIds: []string{rid},
		ScalableDimension: aastypes.ScalableDimension(capacity.ScalableDimension),
	})
	if err != nil {
		return nil, fmt.Errorf("describe scalable target %s: %w", rid, err)
	}
	for i := range out.ScalableTargets {
		if aws.ToString(out.ScalableTargets[i].ResourceId) == rid {
			return &out.ScalableTargets[i], nil
		}
	}
	return nil, nil
}

// RestoreResult says what Restore (or Thaw) changed.
type RestoreResult struct {
	// Changes name each change made, e.g. "instance count 1 → 2"; none means the endpoint already was as
	// recorded.
	Changes []string
	// Notes are what the caller should know but that was not changed, e.g. a target registered since the
	// freeze.
	Notes []string
	// JournalRemoved is true when a journal was deleted.
	JournalRemoved bool
}

// Restore puts the variant back exactly as the journal at path recorded it and then deletes the journal:
// it waits out an update in progress (bounded by wait), registers the target's bounds and SuspendedState as
// they were (when a target existed), and sets the desired instance count as it was. Each step changes only
// what differs, so a second Restore (or one after a crash half-way) is safe; the journal is deleted only once
// everything is back. A target registered since the freeze (there was none before) is left alone and named
// in the result's Notes. Last, before the journal goes, it removes the endpoint's measurement marker when it is
// the journal's run's (another run's is left, and named in the Notes).
func Restore(ctx context.Context, cl FreezeClients, path string, wait WaitOptions) (RestoreResult, error) {
	return restoreFrom(ctx, cl, path, wait, false)
}

// restoreFrom is Restore; forceMarker removes the endpoint's marker whoever's it is.
func restoreFrom(ctx context.Context, cl FreezeClients, path string, wait WaitOptions, forceMarker bool) (RestoreResult, error) {
	j, err := ReadJournal(path)
	if err != nil {
		return RestoreResult{}, err
	}
	res, err := restoreJournal(ctx, cl, j, wait, forceMarker)
	if err != nil {
		return res, fmt.Errorf("restore %s from %s: %w: the journal stays; run tts-bench thaw --endpoint %s again", j.Endpoint, path, err, j.Endpoint)
	}
	if err := removeJournal(path); err != nil {
		return res, err
	}
	res.JournalRemoved = true
	return res, nil
}

func restoreJournal(ctx context.Context, cl FreezeClients, j *Journal, wait WaitOptions, forceMarker bool) (RestoreResult, error) {
	var res RestoreResult
	restoreSuspension := false
	// An update in progress (the pin, or a scaling activity) must settle before the target or the count change.
	d0, err := WaitInService(ctx, cl.SageMaker, j.Endpoint, wait)
	if err != nil {
		return res, err
	}
	// The count before anything is restored: registering the journaled bounds may already bring the count
	// back (Application Auto Scaling moves a count outside new bounds inside them at once), and that is a
	// change thaw made too (ttotal's kill -9 left 2 instances under a target pinned at 2).
	before, err := variantDesired(d0, j.Variant)
	if err != nil {
		return res, err
	}
	target, err := describeTarget(ctx, cl.AutoScaling, j.Endpoint, j.Variant)
	if err != nil {
		return res, err
	}
	switch {
	case j.TargetExisted && target == nil:
		res.Notes = append(res.Notes, fmt.Sprintf("the scalable target of %s was deregistered since the freeze: not registered again (deploy again to restore the plan's scaling)", j.Endpoint))
	case j.TargetExisted:
		changes := boundsChanges(target, j.MinCapacity, j.MaxCapacity, j.Suspended)
		if len(changes) > 0 {
			// The bounds come back first, still fully suspended, so that nothing scales between them and the
			// count; the journaled suspension comes back last (restoreSuspension).
			if err := registerTarget(ctx, cl.AutoScaling, j.Endpoint, j.Variant, j.MinCapacity, j.MaxCapacity, allSuspended); err != nil {
				return res, err
			}
			res.Changes = append(res.Changes, changes...)
			restoreSuspension = true
		}
	case target != nil:
		res.Notes = append(res.Notes, fmt.Sprintf("a scalable target was registered for %s since the freeze (there was none before): left as it is", j.Endpoint))
	}
	changed, err := setDesired(ctx, cl.SageMaker, j.Endpoint, j.Variant, j.DesiredInstanceCount, wait)
	switch {
	case changed:
		res.Changes = append(res.Changes, fmt.Sprintf("instance count %d → %d", before, j.DesiredInstanceCount))
	case err == nil && before != j.DesiredInstanceCount:
		res.Changes = append(res.Changes, fmt.Sprintf("instance count %d → %d (brought inside the restored bounds)", before, j.DesiredInstanceCount))
	}
	if err != nil {
		return res, err
	}
	if restoreSuspension {
		if err := registerTarget(ctx, cl.AutoScaling, j.Endpoint, j.Variant, j.MinCapacity, j.MaxCapacity, j.Suspended); err != nil {
			return res, err
		}
	}
	change, note, err := clearMarker(ctx, cl.SageMaker, aws.ToString(d0.EndpointArn), j.RunID, forceMarker)
	if change != "" {
		res.Changes = append(res.Changes, change)
	}
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	return res, err
}

// allSuspended suspends every kind of scaling.
var allSuspended = Suspension{DynamicIn: true, DynamicOut: true, Scheduled: true}

// boundsChanges names what differs between a target and the wanted bounds and suspension.
func boundsChanges(t *aastypes.ScalableTarget, minC, maxC int32, s Suspension) []string {
	var changes []string
	if got := aws.ToInt32(t.MinCapacity); got != minC {
		changes = append(changes, fmt.Sprintf("minimum capacity %d → %d", got, minC))
	}
	if got := aws.ToInt32(t.MaxCapacity); got != maxC {
		changes = append(changes, fmt.Sprintf("maximum capacity %d → %d", got, maxC))
	}
	if got := suspensionOf(t.SuspendedState); got != s {
		changes = append(changes, fmt.Sprintf("suspended %s → %s", got, s))
	}
	return changes
}

// registerTarget registers the variant's target with exactly these bounds and suspension.
func registerTarget(ctx context.Context, api FreezeScalingAPI, endpoint, variant string, minC, maxC int32, s Suspension) error {
	rid := capacity.ResourceID(endpoint, variant)
	if _, err := api.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: aastypes.ServiceNamespace(capacity.ServiceNamespace), ResourceId: aws.String(rid),
		ScalableDimension: aastypes.ScalableDimension(capacity.ScalableDimension),
		MinCapacity:       aws.Int32(minC), MaxCapacity: aws.Int32(maxC), SuspendedState: s.sdk(),
	}); err != nil {
		return fmt.Errorf("register scalable target %s: %w", rid, err)
	}
	return nil
}

// Bounds are a scalable target's minimum and maximum capacity.
type Bounds struct {
	// Min and Max bound the instance count.
	Min, Max int32
	// Source says where they come from, e.g. "the plan artifacts/espeak-ng/plan.json" or "the catalog".
	Source string
}

// ThawOptions say what Thaw repairs.
type ThawOptions struct {
	// JournalDir holds the journals (DefaultJournalDir in the commands).
	JournalDir string
	// Endpoint and Variant name the variant.
	Endpoint, Variant string
	// Bounds are what the target's bounds become when there is no journal (the plan's when the gate passes,
	// else the catalog's); nil keeps the target's bounds.
	Bounds *Bounds
	// Desired, when set, is the instance count to set once the rest is restored.
	Desired *int32
	// Wait bounds each wait for the endpoint to be InService.
	Wait WaitOptions
	// Force removes another run's measurement marker, and thaws without a journal an endpoint that carries
	// one (live or expired). Without it thaw removes only the marker of the journal's run, and refuses to
	// thaw, without a journal, an endpoint another run has marked (it would unsuspend that run's pin).
	Force bool
}

// Validate reports every problem of the options at once.
func (o ThawOptions) Validate() error {
	var errs []error
	if _, err := JournalPath(o.JournalDir, o.Endpoint); err != nil {
		errs = append(errs, err)
	}
	if o.Variant == "" {
		errs = append(errs, errors.New("variant: empty: give the production variant (AllTraffic)"))
	}
	if b := o.Bounds; b != nil && (b.Min < 0 || b.Max < 1 || b.Min > b.Max) {
		errs = append(errs, fmt.Errorf("bounds from %s: minimum %d, maximum %d: want 0 ≤ minimum ≤ maximum and maximum ≥ 1: fix the source", b.Source, b.Min, b.Max))
	}
	if o.Desired != nil && *o.Desired < 1 {
		errs = append(errs, fmt.Errorf("desired instance count %d: below 1: give at least 1", *o.Desired))
	}
	if err := o.Wait.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ThawResult says what Thaw found and changed.
type ThawResult struct {
	RestoreResult
	// Journal is the journal restored from, nil when there was none.
	Journal *Journal
	// JournalPath is where the journal was looked for.
	JournalPath string
}

// Thaw repairs a variant an interrupted measurement left frozen. With a journal it is Restore (exactly the
// journaled SuspendedState, bounds and count; the journal is then deleted). Without one it unsuspends the
// target and sets its bounds to o.Bounds (when given). Then, when o.Desired is set, it sets the instance count
// (refused outside the target's bounds, which Application Auto Scaling would undo). Every step changes only
// what differs: a second Thaw changes nothing and says so (no Changes).
func Thaw(ctx context.Context, cl FreezeClients, o ThawOptions) (ThawResult, error) {
	if err := o.Validate(); err != nil {
		return ThawResult{}, err
	}
	path, _ := JournalPath(o.JournalDir, o.Endpoint)
	res := ThawResult{JournalPath: path}
	_, statErr := os.Lstat(path)
	switch {
	case statErr == nil:
		j, err := ReadJournal(path)
		if err != nil {
			return res, err
		}
		if j.Variant != o.Variant {
			return res, fmt.Errorf("thaw %s: the journal %s froze variant %s, not %s: thaw that variant", o.Endpoint, path, j.Variant, o.Variant)
		}
		res.Journal = j
		r, err := restoreFrom(ctx, cl, path, o.Wait, o.Force)
		res.RestoreResult = r
		if err != nil {
			return res, err
		}
	case errors.Is(statErr, fs.ErrNotExist):
		d, err := WaitInService(ctx, cl.SageMaker, o.Endpoint, o.Wait)
		if err != nil {
			return res, fmt.Errorf("thaw %s: %w", o.Endpoint, err)
		}
		// Without a journal no marker is this thaw's own: another run's (live or expired) is refused, before
		// anything changes, unless Force; with Force it is removed.
		arn := aws.ToString(d.EndpointArn)
		found, err := ReadMarker(ctx, cl.SageMaker, arn)
		if err != nil {
			return res, fmt.Errorf("thaw %s: %w", o.Endpoint, err)
		}
		if found != nil && !o.Force {
			return res, fmt.Errorf("thaw %s: %w: no journal at %s, and the endpoint carries the measurement marker of %s: thawing now would unsuspend that run's pin under it. "+
				"Run tts-bench thaw --endpoint %s where that run's journal is (its --journal-dir on its machine), or, if that run is gone, add --force (removes the marker and thaws)",
				o.Endpoint, ErrEndpointInUse, path, found.Describe(time.Now()), o.Endpoint)
		}
		if found != nil {
			if err := deleteMarker(ctx, cl.SageMaker, arn); err != nil {
				return res, fmt.Errorf("thaw %s: %w", o.Endpoint, err)
			}
			res.Changes = append(res.Changes, "removed the measurement marker of another run (--force): "+found.Describe(time.Now()))
		}
		target, err := describeTarget(ctx, cl.AutoScaling, o.Endpoint, o.Variant)
		if err != nil {
			return res, fmt.Errorf("thaw %s: %w", o.Endpoint, err)
		}
		if target == nil {
			res.Notes = append(res.Notes, fmt.Sprintf("no scalable target for %s: nothing to unsuspend (speech-infra deploy creates one when a plan passes the gate)", o.Endpoint))
			break
		}
		minC, maxC := aws.ToInt32(target.MinCapacity), aws.ToInt32(target.MaxCapacity)
		if o.Bounds != nil {
			minC, maxC = o.Bounds.Min, o.Bounds.Max
		}
		if changes := boundsChanges(target, minC, maxC, Suspension{}); len(changes) > 0 {
			if err := registerTarget(ctx, cl.AutoScaling, o.Endpoint, o.Variant, minC, maxC, Suspension{}); err != nil {
				return res, fmt.Errorf("thaw %s: %w", o.Endpoint, err)
			}
			if o.Bounds != nil && (aws.ToInt32(target.MinCapacity) != minC || aws.ToInt32(target.MaxCapacity) != maxC) {
				changes = append(changes, "bounds from "+o.Bounds.Source)
			}
			res.Changes = append(res.Changes, changes...)
		}
	default:
		return res, fmt.Errorf("thaw %s: look for the journal %s: %w", o.Endpoint, path, statErr)
	}
	if o.Desired == nil {
		return res, nil
	}
	want := *o.Desired
	target, err := describeTarget(ctx, cl.AutoScaling, o.Endpoint, o.Variant)
	if err != nil {
		return res, fmt.Errorf("thaw %s: %w", o.Endpoint, err)
	}
	if target != nil && (want < aws.ToInt32(target.MinCapacity) || want > aws.ToInt32(target.MaxCapacity)) {
		return res, fmt.Errorf("thaw %s: desired instance count %d is outside the target's bounds %d–%d, which would undo it: give a count within them",
			o.Endpoint, want, aws.ToInt32(target.MinCapacity), aws.ToInt32(target.MaxCapacity))
	}
	d, err := WaitInService(ctx, cl.SageMaker, o.Endpoint, o.Wait)
	if err != nil {
		return res, fmt.Errorf("thaw %s: %w", o.Endpoint, err)
	}
	cur, err := variantDesired(d, o.Variant)
	if err != nil {
		return res, fmt.Errorf("thaw %s: %w", o.Endpoint, err)
	}
	changed, err := setDesired(ctx, cl.SageMaker, o.Endpoint, o.Variant, want, o.Wait)
	if changed {
		res.Changes = append(res.Changes, fmt.Sprintf("instance count %d → %d", cur, want))
	}
	if err != nil {
		return res, fmt.Errorf("thaw %s: %w", o.Endpoint, err)
	}
	return res, nil
}
