package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/autoscale"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/strictjson"
)

// account and region are what the emulator writes into ARNs.
const (
	account = "000000000000"
	region  = "us-east-1"
)

// Endpoint statuses, as SageMaker names them.
const (
	statusCreating  = "Creating"
	statusUpdating  = "Updating"
	statusInService = "InService"
	statusDeleting  = "Deleting"
	statusFailed    = "Failed"
)

// state is everything the emulator persists in <state dir>/state.json. Metrics are kept in memory only.
type state struct {
	Models          map[string]*modelRec          `json:"models"`
	EndpointConfigs map[string]*endpointConfigRec `json:"endpoint_configs"`
	Endpoints       map[string]*endpointRec       `json:"endpoints"`
	Targets         map[string]*targetRec         `json:"targets"`
	Policies        map[string]*policyRec         `json:"policies"`
	Alarms          map[string]*alarmRec          `json:"alarms"`
	Activities      []*activityRec                `json:"activities"`
	// ScheduledActions are the Application Auto Scaling scheduled actions, by target key and name.
	ScheduledActions map[string]*scheduledActionRec `json:"scheduled_actions"`
	NextInstance     int                            `json:"next_instance"`
}

type containerDef struct {
	Image        string            `json:"Image,omitempty"`
	ModelDataURL string            `json:"ModelDataUrl,omitempty"`
	Environment  map[string]string `json:"Environment,omitempty"`
}

type modelRec struct {
	Name             string       `json:"name"`
	Arn              string       `json:"arn"`
	Container        containerDef `json:"container"`
	ExecutionRoleArn string       `json:"execution_role_arn,omitempty"`
	Created          time.Time    `json:"created"`
	// Tags are the model's tags (AddTags, ListTags, DeleteTags), in the order their keys were first added.
	Tags []tagRec `json:"tags,omitempty"`
}

// tagRec is one SageMaker tag.
type tagRec struct {
	Key   string `json:"Key"`
	Value string `json:"Value"`
}

type variantRec struct {
	VariantName          string  `json:"VariantName"`
	ModelName            string  `json:"ModelName"`
	InitialInstanceCount int     `json:"InitialInstanceCount"`
	InstanceType         string  `json:"InstanceType,omitempty"`
	InitialVariantWeight float64 `json:"InitialVariantWeight,omitempty"`
	StartupTimeoutS      int     `json:"ContainerStartupHealthCheckTimeoutInSeconds,omitempty"`
	DownloadTimeoutS     int     `json:"ModelDataDownloadTimeoutInSeconds,omitempty"`
}

type endpointConfigRec struct {
	Name     string       `json:"name"`
	Arn      string       `json:"arn"`
	Variants []variantRec `json:"variants"`
	Created  time.Time    `json:"created"`
	// Tags are the endpoint config's tags.
	Tags []tagRec `json:"tags,omitempty"`
}

type endpointRec struct {
	Name          string    `json:"name"`
	Arn           string    `json:"arn"`
	ConfigName    string    `json:"config_name"`
	Status        string    `json:"status"`
	FailureReason string    `json:"failure_reason,omitempty"`
	Variant       string    `json:"variant"`
	ModelName     string    `json:"model_name"`
	InstanceType  string    `json:"instance_type"`
	Weight        float64   `json:"weight"`
	Desired       int       `json:"desired"`
	Instances     []string  `json:"instances"`
	Created       time.Time `json:"created"`
	Modified      time.Time `json:"modified"`
	// Model is the model definition captured when the endpoint was created or last updated: instances start
	// from it, so the endpoint can replace instances after DeleteModel, as on SageMaker. Nil only in a record
	// written by an older emulator (captured at the next start of an instance, if the model still exists).
	Model *modelRec `json:"model,omitempty"`
	// StartupTimeoutS is the variant's ContainerStartupHealthCheckTimeoutInSeconds, captured with Model.
	StartupTimeoutS int `json:"startup_timeout_s,omitempty"`
	// Pending is the deployment UpdateEndpoint started and the fleet has not finished: the new endpoint
	// config and the instance count it brings up. Nil when no update is in progress.
	Pending *pendingDeployment `json:"pending,omitempty"`
	// VariantStatus is the variant's deployment stage that DescribeEndpoint shows in
	// ProductionVariants[].VariantStatus (Creating, Updating, ActivatingTraffic); nil when none is in progress.
	VariantStatus *variantStatus `json:"variant_status,omitempty"`
	// Tags are the endpoint's tags (AddTags, ListTags, DeleteTags), in the order their keys were first added.
	Tags []tagRec `json:"tags,omitempty"`
}

// Variant statuses, as SageMaker's ProductionVariantStatus names them.
const (
	variantCreating          = "Creating"
	variantUpdating          = "Updating"
	variantActivatingTraffic = "ActivatingTraffic"
)

// variantStatus is one ProductionVariantStatus: the stage, when it started and, where the emulator has one,
// its StatusMessage ("A message that describes the status of the production variant.").
type variantStatus struct {
	Status  string    `json:"status"`
	Start   time.Time `json:"start"`
	Message string    `json:"message,omitempty"`
}

// pendingDeployment is an UpdateEndpoint in progress: a blue/green swap to another endpoint config.
type pendingDeployment struct {
	ConfigName string    `json:"config_name"`
	Desired    int       `json:"desired"`
	Started    time.Time `json:"started"`
	// Variant and Model are the new config's variant and its model, captured when the update was asked for.
	Variant *variantRec `json:"variant,omitempty"`
	Model   *modelRec   `json:"model,omitempty"`
	// VariantStatus is the new variant's stage, shown in PendingDeploymentSummary: Creating while its instances
	// start, ActivatingTraffic while traffic moves to them.
	VariantStatus *variantStatus `json:"variant_status,omitempty"`
}

type suspendedState struct {
	DynamicScalingInSuspended  *bool `json:"DynamicScalingInSuspended,omitempty"`
	DynamicScalingOutSuspended *bool `json:"DynamicScalingOutSuspended,omitempty"`
	ScheduledScalingSuspended  *bool `json:"ScheduledScalingSuspended,omitempty"`
}

type targetRec struct {
	Namespace     string         `json:"namespace"`
	ResourceID    string         `json:"resource_id"`
	Dimension     string         `json:"dimension"`
	Min           int            `json:"min"`
	Max           int            `json:"max"`
	RoleARN       string         `json:"role_arn,omitempty"`
	Arn           string         `json:"arn"`
	Suspended     suspendedState `json:"suspended"`
	Created       time.Time      `json:"created"`
	LastScaleOut  time.Time      `json:"last_scale_out"`
	LastScaleIn   time.Time      `json:"last_scale_in"`
	LastOutPolicy string         `json:"last_out_policy,omitempty"`
}

type dimension struct {
	Name  string `json:"Name"`
	Value string `json:"Value"`
}

type stepAdjustment struct {
	MetricIntervalLowerBound *float64 `json:"MetricIntervalLowerBound,omitempty"`
	MetricIntervalUpperBound *float64 `json:"MetricIntervalUpperBound,omitempty"`
	ScalingAdjustment        int      `json:"ScalingAdjustment"`
}

type stepConfig struct {
	AdjustmentType         string           `json:"AdjustmentType,omitempty"`
	StepAdjustments        []stepAdjustment `json:"StepAdjustments,omitempty"`
	MinAdjustmentMagnitude *int             `json:"MinAdjustmentMagnitude,omitempty"`
	Cooldown               *int             `json:"Cooldown,omitempty"`
	MetricAggregationType  string           `json:"MetricAggregationType,omitempty"`
}

type predefinedMetric struct {
	PredefinedMetricType string `json:"PredefinedMetricType"`
	ResourceLabel        string `json:"ResourceLabel,omitempty"`
}

type customizedMetric struct {
	MetricName string      `json:"MetricName,omitempty"`
	Namespace  string      `json:"Namespace,omitempty"`
	Dimensions []dimension `json:"Dimensions,omitempty"`
	Statistic  string      `json:"Statistic,omitempty"`
	Unit       string      `json:"Unit,omitempty"`
	Metrics    []any       `json:"Metrics,omitempty"`
}

type targetTrackingConfig struct {
	TargetValue                   *float64          `json:"TargetValue"`
	PredefinedMetricSpecification *predefinedMetric `json:"PredefinedMetricSpecification,omitempty"`
	CustomizedMetricSpecification *customizedMetric `json:"CustomizedMetricSpecification,omitempty"`
	ScaleOutCooldown              *int              `json:"ScaleOutCooldown,omitempty"`
	ScaleInCooldown               *int              `json:"ScaleInCooldown,omitempty"`
	DisableScaleIn                *bool             `json:"DisableScaleIn,omitempty"`
}

type policyRec struct {
	Name           string                `json:"name"`
	Arn            string                `json:"arn"`
	Namespace      string                `json:"namespace"`
	ResourceID     string                `json:"resource_id"`
	Dimension      string                `json:"dimension"`
	Type           string                `json:"type"`
	Step           *stepConfig           `json:"step,omitempty"`
	TargetTracking *targetTrackingConfig `json:"target_tracking,omitempty"`
	// OwnAlarms are the alarms a target tracking policy created and deletes with itself.
	OwnAlarms []string  `json:"own_alarms,omitempty"`
	Created   time.Time `json:"created"`
	// LastFired is when a step policy last changed capacity, for its cooldown.
	LastFired time.Time `json:"last_fired"`
	// LastScaleOut, ScaleOutFrom, ScaleOutEnd, LastScaleIn and ScaleInEnd are the policy's cooldown memory
	// (autoscale.PolicyState); the ends are the EndTimes of the activities, reported when they complete.
	LastScaleOut time.Time `json:"last_scale_out,omitempty"`
	ScaleOutFrom int       `json:"scale_out_from,omitempty"`
	ScaleOutEnd  time.Time `json:"scale_out_end,omitempty"`
	LastScaleIn  time.Time `json:"last_scale_in,omitempty"`
	ScaleInEnd   time.Time `json:"scale_in_end,omitempty"`
}

// policyState is the policy's cooldown memory as autoscale.Decide takes it.
func (p *policyRec) policyState() autoscale.PolicyState {
	return autoscale.PolicyState{LastScaleOut: p.LastScaleOut, ScaleOutFrom: p.ScaleOutFrom, ScaleOutEnd: p.ScaleOutEnd,
		LastScaleIn: p.LastScaleIn, ScaleInEnd: p.ScaleInEnd}
}

// setPolicyState keeps the cooldown memory autoscale.Decide (or PolicyState.Completed) returned.
func (p *policyRec) setPolicyState(st autoscale.PolicyState) {
	p.LastScaleOut, p.ScaleOutFrom, p.ScaleOutEnd = st.LastScaleOut, st.ScaleOutFrom, st.ScaleOutEnd
	p.LastScaleIn, p.ScaleInEnd = st.LastScaleIn, st.ScaleInEnd
}

type alarmRec struct {
	Name               string      `json:"name"`
	Arn                string      `json:"arn"`
	Description        string      `json:"description,omitempty"`
	ActionsEnabled     bool        `json:"actions_enabled"`
	AlarmActions       []string    `json:"alarm_actions,omitempty"`
	OKActions          []string    `json:"ok_actions,omitempty"`
	InsufficientData   []string    `json:"insufficient_data_actions,omitempty"`
	Namespace          string      `json:"namespace"`
	MetricName         string      `json:"metric_name"`
	Dimensions         []dimension `json:"dimensions,omitempty"`
	Statistic          string      `json:"statistic,omitempty"`
	ExtendedStatistic  string      `json:"extended_statistic,omitempty"`
	Unit               string      `json:"unit,omitempty"`
	Period             int         `json:"period"`
	EvaluationPeriods  int         `json:"evaluation_periods"`
	DatapointsToAlarm  int         `json:"datapoints_to_alarm,omitempty"`
	Threshold          float64     `json:"threshold"`
	ComparisonOperator string      `json:"comparison_operator"`
	TreatMissingData   string      `json:"treat_missing_data,omitempty"`
	State              string      `json:"state"`
	StateReason        string      `json:"state_reason"`
	StateUpdated       time.Time   `json:"state_updated"`
	ConfigUpdated      time.Time   `json:"config_updated"`
	// LastValue is the newest datapoint the last evaluation saw; step policies measure breaches from it.
	LastValue float64 `json:"last_value"`
}

type activityRec struct {
	ID          string    `json:"id"`
	Namespace   string    `json:"namespace"`
	ResourceID  string    `json:"resource_id"`
	Dimension   string    `json:"dimension"`
	Description string    `json:"description"`
	Cause       string    `json:"cause"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	StatusCode  string    `json:"status_code"`
	Message     string    `json:"message,omitempty"`
	// Capacity is the capacity the activity sets; NotScaled the reasons of a not scaled activity.
	Capacity int `json:"capacity,omitempty"`
	// Policy is the key of the policy whose decision started the activity ("" for one the target's bounds
	// started) and Out whether it scales out: when the activity ends, the policy's cooldown starts from its
	// EndTime.
	Policy    string            `json:"policy,omitempty"`
	Out       bool              `json:"out,omitempty"`
	NotScaled []notScaledReason `json:"not_scaled,omitempty"`
}

// notScaledReason is a NotScaledReason of a not scaled activity.
type notScaledReason struct {
	Code            string `json:"Code"`
	CurrentCapacity *int   `json:"CurrentCapacity,omitempty"`
	MinCapacity     *int   `json:"MinCapacity,omitempty"`
	MaxCapacity     *int   `json:"MaxCapacity,omitempty"`
}

func newState() *state {
	return &state{
		Models:           map[string]*modelRec{},
		EndpointConfigs:  map[string]*endpointConfigRec{},
		Endpoints:        map[string]*endpointRec{},
		Targets:          map[string]*targetRec{},
		Policies:         map[string]*policyRec{},
		Alarms:           map[string]*alarmRec{},
		ScheduledActions: map[string]*scheduledActionRec{},
	}
}

// MaxStateFile bounds what loadState reads of state.json: far above what the emulator writes (its records are
// bounded: 1,000 activities, the instance quota), so a larger file, or a device such as /dev/zero in its
// place, is refused rather than read until memory runs out.
const MaxStateFile = 64 << 20

// loadState reads state.json from dir, or returns an empty state when there is none yet. It reads only a
// regular file of at most MaxStateFile bytes (strictjson.ReadFile), and refuses a key that appears twice in
// one object: encoding/json would keep the last one, so a duplicate "desired" could load as 0.
func loadState(dir string) (*state, error) {
	path := filepath.Join(dir, "state.json")
	b, err := strictjson.ReadFile(path, MaxStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return newState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read emulator state: %w: repair or remove the file", err)
	}
	s := newState()
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("read emulator state %s: %w", path, err)
	}
	if dups := strictjson.DuplicateKeysFor(b, reflect.TypeOf(s)); len(dups) > 0 {
		return nil, fmt.Errorf("read emulator state %s: %s: repair or remove the file", path, strings.Join(dups, "; "))
	}
	// A map the file leaves out keeps the empty map newState made, but one the file holds as null comes back
	// nil; make those usable.
	fresh := newState()
	if s.Models == nil {
		s.Models = fresh.Models
	}
	if s.EndpointConfigs == nil {
		s.EndpointConfigs = fresh.EndpointConfigs
	}
	if s.Endpoints == nil {
		s.Endpoints = fresh.Endpoints
	}
	if s.Targets == nil {
		s.Targets = fresh.Targets
	}
	if s.Policies == nil {
		s.Policies = fresh.Policies
	}
	if s.Alarms == nil {
		s.Alarms = fresh.Alarms
	}
	if s.ScheduledActions == nil {
		s.ScheduledActions = fresh.ScheduledActions
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("read emulator state %s: %w: repair or remove the file", filepath.Join(dir, "state.json"), err)
	}
	return s, nil
}

// knownStatuses are the endpoint statuses the emulator writes.
var knownStatuses = []string{statusCreating, statusUpdating, statusInService, statusDeleting, statusFailed}

// validate refuses a state the emulator cannot run from: null entries, a key that differs from its record's
// name, a negative instance count, an endpoint config without exactly one variant or an unknown status. A count
// above the instance quota is repaired (with a logged reason) when the fleet starts, since the quota is an
// option of the running emulator, not of the file.
func (s *state) validate() error {
	for name, m := range s.Models {
		if m == nil {
			return fmt.Errorf("models[%q] is null", name)
		}
		if m.Name != name {
			return fmt.Errorf("models[%q] has name %q", name, m.Name)
		}
	}
	for name, c := range s.EndpointConfigs {
		if c == nil {
			return fmt.Errorf("endpoint_configs[%q] is null", name)
		}
		if c.Name != name {
			return fmt.Errorf("endpoint_configs[%q] has name %q", name, c.Name)
		}
		if len(c.Variants) != 1 {
			return fmt.Errorf("endpoint_configs[%q] has %d variants, want exactly 1", name, len(c.Variants))
		}
		if n := c.Variants[0].InitialInstanceCount; n < 1 {
			return fmt.Errorf("endpoint_configs[%q].variants[0].InitialInstanceCount is %d, want at least 1", name, n)
		}
	}
	for name, ep := range s.Endpoints {
		if ep == nil {
			return fmt.Errorf("endpoints[%q] is null", name)
		}
		if ep.Name != name {
			return fmt.Errorf("endpoints[%q] has name %q", name, ep.Name)
		}
		if ep.Desired < 0 {
			return fmt.Errorf("endpoints[%q].desired is %d, want 0 or more", name, ep.Desired)
		}
		if !slices.Contains(knownStatuses, ep.Status) {
			return fmt.Errorf("endpoints[%q].status is %q, want one of %v", name, ep.Status, knownStatuses)
		}
		if ep.Model != nil && ep.Model.Name == "" {
			return fmt.Errorf("endpoints[%q].model has no name", name)
		}
		if pd := ep.Pending; pd != nil && pd.Desired < 1 {
			return fmt.Errorf("endpoints[%q].pending.desired is %d, want at least 1", name, pd.Desired)
		}
	}
	for key, t := range s.Targets {
		if t == nil {
			return fmt.Errorf("targets[%q] is null", key)
		}
		if t.Min < 0 || t.Max < t.Min {
			return fmt.Errorf("targets[%q] has capacity [%d, %d], want 0 <= min <= max", key, t.Min, t.Max)
		}
	}
	for key, p := range s.Policies {
		if p == nil {
			return fmt.Errorf("policies[%q] is null", key)
		}
		if p.TargetTracking != nil && p.TargetTracking.TargetValue == nil {
			return fmt.Errorf("policies[%q].target_tracking has no TargetValue", key)
		}
	}
	for name, a := range s.Alarms {
		if a == nil {
			return fmt.Errorf("alarms[%q] is null", name)
		}
	}
	for key, a := range s.ScheduledActions {
		if a == nil {
			return fmt.Errorf("scheduled_actions[%q] is null", key)
		}
		if k := scheduledKey(a.Namespace, a.ResourceID, a.Dimension, a.Name); k != key {
			return fmt.Errorf("scheduled_actions[%q] is keyed %q", key, k)
		}
		if _, err := parseSchedule(a.Schedule); err != nil {
			return fmt.Errorf("scheduled_actions[%q].schedule %q: %v", key, a.Schedule, err)
		}
		if _, err := a.location(); err != nil {
			return fmt.Errorf("scheduled_actions[%q].timezone: %v", key, err)
		}
	}
	for i, a := range s.Activities {
		if a == nil {
			return fmt.Errorf("activities[%d] is null", i)
		}
	}
	if s.NextInstance < 0 {
		return fmt.Errorf("next_instance is %d, want 0 or more", s.NextInstance)
	}
	return nil
}

// save writes the state atomically (see atomicfile.WriteFile): a crash or a second writer never leaves half a
// file, and the saved state survives a crash once save returns.
func (s *state) save(dir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode emulator state: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "state.json"), b, 0o644); err != nil {
		return fmt.Errorf("save emulator state: %w", err)
	}
	return nil
}

func targetKey(ns, resourceID, dim string) string { return ns + "|" + resourceID + "|" + dim }

func policyKey(ns, resourceID, dim, name string) string {
	return targetKey(ns, resourceID, dim) + "|" + name
}
