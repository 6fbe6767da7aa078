package emulator

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/autoscale"
)

// The scalable dimension and namespace of SageMaker variants, the only targets the emulator scales.
const (
	namespaceSM       = "sagemaker"
	dimensionVariant  = "sagemaker:variant:DesiredInstanceCount"
	predefinedHighRes = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
)

func aasValidation(format string, args ...any) *apiError {
	return errorf("ValidationException", http.StatusBadRequest, format, args...)
}

func aasNotFound(format string, args ...any) *apiError {
	return errorf("ObjectNotFoundException", http.StatusBadRequest, format, args...)
}

func newID() string {
	b := make([]byte, 16)
	rand.Read(b)
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// autoscalingOps are the Application Auto Scaling operations (awsJson1_1, X-Amz-Target
// AnyScaleFrontendService.<op>).
var autoscalingOps = map[string]operation{
	"RegisterScalableTarget":    (*Emulator).registerScalableTarget,
	"DescribeScalableTargets":   (*Emulator).describeScalableTargets,
	"DeregisterScalableTarget":  (*Emulator).deregisterScalableTarget,
	"PutScalingPolicy":          (*Emulator).putScalingPolicy,
	"DescribeScalingPolicies":   (*Emulator).describeScalingPolicies,
	"DeleteScalingPolicy":       (*Emulator).deleteScalingPolicy,
	"DescribeScalingActivities": (*Emulator).describeScalingActivities,
	"PutScheduledAction":        (*Emulator).putScheduledAction,
	"DescribeScheduledActions":  (*Emulator).describeScheduledActions,
	"DeleteScheduledAction":     (*Emulator).deleteScheduledAction,
}

type targetInput struct {
	ServiceNamespace  string
	ResourceId        string
	ScalableDimension string
}

// targetFilter selects what a Describe call lists: a namespace (required) and, when given, one resource and
// one dimension.
type targetFilter struct {
	ServiceNamespace  string
	ResourceId        string
	ScalableDimension string
}

// matches reports whether a record of namespace ns, resource id and dimension passes the filter.
func (f targetFilter) matches(ns, id, dim string) bool {
	return ns == f.ServiceNamespace && (f.ResourceId == "" || id == f.ResourceId) &&
		(f.ScalableDimension == "" || dim == f.ScalableDimension)
}

// requireNamespace is the check every Describe call makes: ServiceNamespace is required.
func requireNamespace(ns string) *apiError {
	if ns == "" {
		return aasValidation("1 validation error detected: Value null at 'serviceNamespace' failed to satisfy constraint: Member must not be null")
	}
	return nil
}

// The enums of the Application Auto Scaling API (botocore's application-autoscaling model): a value outside
// them is a ValidationException before anything else is looked at.
var (
	enumServiceNamespace = []string{"ecs", "elasticmapreduce", "ec2", "appstream", "dynamodb", "rds", "sagemaker", "custom-resource",
		"comprehend", "lambda", "cassandra", "kafka", "elasticache", "neptune", "workspaces"}
	enumScalableDimension = []string{"ecs:service:DesiredCount", "ec2:spot-fleet-request:TargetCapacity",
		"elasticmapreduce:instancegroup:InstanceCount", "appstream:fleet:DesiredCapacity", "dynamodb:table:ReadCapacityUnits",
		"dynamodb:table:WriteCapacityUnits", "dynamodb:index:ReadCapacityUnits", "dynamodb:index:WriteCapacityUnits",
		"rds:cluster:ReadReplicaCount", "sagemaker:variant:DesiredInstanceCount", "custom-resource:ResourceType:Property",
		"comprehend:document-classifier-endpoint:DesiredInferenceUnits", "comprehend:entity-recognizer-endpoint:DesiredInferenceUnits",
		"lambda:function:ProvisionedConcurrency", "cassandra:table:ReadCapacityUnits", "cassandra:table:WriteCapacityUnits",
		"kafka:broker-storage:VolumeSize", "elasticache:cache-cluster:Nodes", "elasticache:replication-group:NodeGroups",
		"elasticache:replication-group:Replicas", "neptune:cluster:ReadReplicaCount", "sagemaker:variant:DesiredProvisionedConcurrency",
		"sagemaker:inference-component:DesiredCopyCount", "workspaces:workspacespool:DesiredUserSessions"}
	enumPolicyType     = []string{"StepScaling", "TargetTrackingScaling", "PredictiveScaling"}
	enumAdjustmentType = []string{autoscale.ChangeInCapacity, autoscale.PercentChangeInCapacity, autoscale.ExactCapacity}
	enumAggregation    = []string{autoscale.AggregateAverage, autoscale.AggregateMinimum, autoscale.AggregateMaximum}
	enumStatistic      = []string{"Average", "Minimum", "Maximum", "SampleCount", "Sum"}
	enumMetricType     = []string{"DynamoDBReadCapacityUtilization", "DynamoDBWriteCapacityUtilization", "ALBRequestCountPerTarget",
		"RDSReaderAverageCPUUtilization", "RDSReaderAverageDatabaseConnections", "EC2SpotFleetRequestAverageCPUUtilization",
		"EC2SpotFleetRequestAverageNetworkIn", "EC2SpotFleetRequestAverageNetworkOut", "SageMakerVariantInvocationsPerInstance",
		"ECSServiceAverageCPUUtilization", "ECSServiceAverageMemoryUtilization", "AppStreamAverageCapacityUtilization",
		"ComprehendInferenceUtilization", "LambdaProvisionedConcurrencyUtilization", "CassandraReadCapacityUtilization",
		"CassandraWriteCapacityUtilization", "KafkaBrokerStorageUtilization", "ElastiCacheEngineCPUUtilization",
		"ElastiCacheDatabaseMemoryUsagePercentage", "ElastiCachePrimaryEngineCPUUtilization", "ElastiCacheReplicaEngineCPUUtilization",
		"ElastiCacheDatabaseMemoryUsageCountedForEvictPercentage", "NeptuneReaderAverageCPUUtilization",
		"SageMakerVariantProvisionedConcurrencyUtilization", "ElastiCacheDatabaseCapacityUsageCountedForEvictPercentage",
		"SageMakerInferenceComponentInvocationsPerCopy", "WorkSpacesAverageUserSessionsCapacityUtilization",
		"SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution", "SageMakerVariantConcurrentRequestsPerModelHighResolution"}
)

// aasEnum answers a value outside its enum as Application Auto Scaling does (a ValidationException naming
// the member and the enum value set); "" passes (required members are checked on their own).
func aasEnum(member, v string, set []string) *apiError {
	if v == "" || slices.Contains(set, v) {
		return nil
	}
	return aasValidation("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy enum value set: [%s]", v, member, strings.Join(set, ", "))
}

// checkFilter validates the filter of a Describe call: the namespace is required and, like the dimension, a
// value of its enum.
func checkFilter(f targetFilter) *apiError {
	if err := requireNamespace(f.ServiceNamespace); err != nil {
		return err
	}
	if err := aasEnum("serviceNamespace", f.ServiceNamespace, enumServiceNamespace); err != nil {
		return err
	}
	return aasEnum("scalableDimension", f.ScalableDimension, enumScalableDimension)
}

// checkTarget validates the namespace, resource id and dimension of a request and returns the endpoint and
// variant the resource id names.
func checkTarget(in targetInput) (endpoint, variant string, err *apiError) {
	if err := aasEnum("serviceNamespace", in.ServiceNamespace, enumServiceNamespace); err != nil {
		return "", "", err
	}
	if err := aasEnum("scalableDimension", in.ScalableDimension, enumScalableDimension); err != nil {
		return "", "", err
	}
	if in.ServiceNamespace != namespaceSM {
		return "", "", aasValidation("the emulator scales only the sagemaker namespace, not %q", in.ServiceNamespace)
	}
	if in.ScalableDimension != dimensionVariant {
		return "", "", aasValidation("Unsupported scalable dimension %q: use %s", in.ScalableDimension, dimensionVariant)
	}
	parts := strings.Split(in.ResourceId, "/")
	if len(parts) != 4 || parts[0] != "endpoint" || parts[2] != "variant" || parts[1] == "" || parts[3] == "" {
		return "", "", aasValidation("Unsupported resource ID %q: use endpoint/<endpoint-name>/variant/<variant-name>", in.ResourceId)
	}
	return parts[1], parts[3], nil
}

func (e *Emulator) registerScalableTarget(dec decoder) (any, *apiError) {
	var in struct {
		targetInput
		MinCapacity    *int
		MaxCapacity    *int
		RoleARN        string
		SuspendedState *suspendedState
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	endpoint, variant, apiErr := checkTarget(in.targetInput)
	if apiErr != nil {
		return nil, apiErr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ep := e.st.Endpoints[endpoint]
	if ep == nil || ep.Variant != variant {
		return nil, aasValidation("Could not find variant %s for endpoint %s.", variant, endpoint)
	}
	key := targetKey(in.ServiceNamespace, in.ResourceId, in.ScalableDimension)
	t := e.st.Targets[key]
	if t == nil {
		if in.MinCapacity == nil || in.MaxCapacity == nil {
			return nil, aasValidation("MinCapacity and MaxCapacity are required when registering a new scalable target.")
		}
		t = &targetRec{Namespace: in.ServiceNamespace, ResourceID: in.ResourceId, Dimension: in.ScalableDimension,
			Arn: arn("application-autoscaling", "scalable-target/"+newID()[:8]), Created: time.Now().UTC(),
			Suspended: suspendedState{DynamicScalingInSuspended: ptr(false), DynamicScalingOutSuspended: ptr(false), ScheduledScalingSuspended: ptr(false)}}
	}
	minC, maxC := t.Min, t.Max
	if in.MinCapacity != nil {
		minC = *in.MinCapacity
	}
	if in.MaxCapacity != nil {
		maxC = *in.MaxCapacity
	}
	if minC < 0 || maxC < 0 || minC > maxC {
		return nil, aasValidation("Minimum capacity (%d) cannot be greater than maximum capacity (%d) and neither may be negative.", minC, maxC)
	}
	if maxC < 1 {
		return nil, aasValidation("The maximum capacity of a SageMaker variant must be at least 1.")
	}
	t.Min, t.Max = minC, maxC
	if in.RoleARN != "" {
		t.RoleARN = in.RoleARN
	}
	if t.RoleARN == "" {
		// IAM is a global service: its ARNs have an empty region field.
		t.RoleARN = fmt.Sprintf("arn:aws:iam::%s:role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint", account)
	}
	// Suspension fields that are omitted keep their value, as Application Auto Scaling merges them.
	if s := in.SuspendedState; s != nil {
		if s.DynamicScalingInSuspended != nil {
			t.Suspended.DynamicScalingInSuspended = s.DynamicScalingInSuspended
		}
		if s.DynamicScalingOutSuspended != nil {
			t.Suspended.DynamicScalingOutSuspended = s.DynamicScalingOutSuspended
		}
		if s.ScheduledScalingSuspended != nil {
			t.Suspended.ScheduledScalingSuspended = s.ScheduledScalingSuspended
		}
	}
	e.st.Targets[key] = t
	// A capacity outside the new bounds is brought inside them at once, as Application Auto Scaling does.
	if ep.Status == statusInService && (ep.Desired < t.Min || ep.Desired > t.Max) {
		want := min(max(ep.Desired, t.Min), t.Max)
		e.applyCapacityLocked(t, ep, want,
			fmt.Sprintf("minimum capacity %d, maximum capacity %d: the current capacity %d is outside the bounds", t.Min, t.Max, ep.Desired), "")
	}
	e.saveLocked()
	return map[string]any{"ScalableTargetARN": t.Arn}, nil
}

func ptr[T any](v T) *T { return &v }

func targetView(t *targetRec) map[string]any {
	return map[string]any{
		"ServiceNamespace":  t.Namespace,
		"ResourceId":        t.ResourceID,
		"ScalableDimension": t.Dimension,
		"MinCapacity":       t.Min,
		"MaxCapacity":       t.Max,
		"RoleARN":           t.RoleARN,
		"CreationTime":      newEpoch(t.Created),
		"SuspendedState":    t.Suspended,
		"ScalableTargetARN": t.Arn,
	}
}

func (e *Emulator) describeScalableTargets(dec decoder) (any, *apiError) {
	var in struct {
		ServiceNamespace  string
		ResourceIds       []string
		ScalableDimension string
		MaxResults        *int
		NextToken         *string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if err := checkFilter(targetFilter{ServiceNamespace: in.ServiceNamespace, ScalableDimension: in.ScalableDimension}); err != nil {
		return nil, err
	}
	limit, apiErr := pageSize(in.MaxResults, 50)
	if apiErr != nil {
		return nil, apiErr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var list []*targetRec
	for _, t := range e.st.Targets {
		if t.Namespace != in.ServiceNamespace {
			continue
		}
		if len(in.ResourceIds) > 0 && !contains(in.ResourceIds, t.ResourceID) {
			continue
		}
		if in.ScalableDimension != "" && t.Dimension != in.ScalableDimension {
			continue
		}
		list = append(list, t)
	}
	sort.Slice(list, func(i, j int) bool {
		return list[i].ResourceID+"|"+list[i].Dimension < list[j].ResourceID+"|"+list[j].Dimension
	})
	from, apiErr := pageStart(in.NextToken, "targets", len(list), func(i int) string { return list[i].Arn })
	if apiErr != nil {
		return nil, apiErr
	}
	out := make([]map[string]any, 0, min(limit, len(list)))
	for _, t := range list[from:min(from+limit, len(list))] {
		out = append(out, targetView(t))
	}
	resp := map[string]any{"ScalableTargets": out}
	if from+limit < len(list) {
		resp["NextToken"] = pageToken("targets", list[from+limit-1].Arn)
	}
	return resp, nil
}

func (e *Emulator) deregisterScalableTarget(dec decoder) (any, *apiError) {
	var in targetInput
	if err := dec(&in); err != nil {
		return nil, err
	}
	if _, _, err := checkTarget(in); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	key := targetKey(in.ServiceNamespace, in.ResourceId, in.ScalableDimension)
	if _, ok := e.st.Targets[key]; !ok {
		return nil, aasNotFound("No scalable target registered for service namespace: %s, resource ID: %s, scalable dimension: %s", in.ServiceNamespace, in.ResourceId, in.ScalableDimension)
	}
	// Deregistering deletes the target's policies and the alarms target tracking created for them.
	for k, p := range e.st.Policies {
		if strings.HasPrefix(k, key+"|") {
			e.deletePolicyLocked(k, p)
		}
	}
	// "If a scalable target is deregistered, the scalable target is no longer available to run scheduled
	// actions. Any scheduled actions that were specified for the scalable target are deleted." (PutScheduledAction)
	for k := range e.st.ScheduledActions {
		if strings.HasPrefix(k, key+"|") {
			delete(e.st.ScheduledActions, k)
		}
	}
	delete(e.st.Targets, key)
	e.saveLocked()
	return map[string]any{}, nil
}

func (e *Emulator) deletePolicyLocked(key string, p *policyRec) {
	for _, a := range p.OwnAlarms {
		delete(e.st.Alarms, a)
	}
	delete(e.st.Policies, key)
}

func (e *Emulator) putScalingPolicy(dec decoder) (any, *apiError) {
	var in struct {
		targetInput
		PolicyName                               string
		PolicyType                               string
		StepScalingPolicyConfiguration           *stepConfig
		TargetTrackingScalingPolicyConfiguration *targetTrackingConfig
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	endpoint, variant, apiErr := checkTarget(in.targetInput)
	if apiErr != nil {
		return nil, apiErr
	}
	if in.PolicyName == "" {
		return nil, aasValidation("1 validation error detected: Value null at 'policyName' failed to satisfy constraint: Member must not be null")
	}
	if err := aasEnum("policyType", in.PolicyType, enumPolicyType); err != nil {
		return nil, err
	}
	if in.PolicyType == "" {
		in.PolicyType = "StepScaling"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	tkey := targetKey(in.ServiceNamespace, in.ResourceId, in.ScalableDimension)
	if _, ok := e.st.Targets[tkey]; !ok {
		return nil, aasNotFound("No scalable target registered for service namespace: %s, resource ID: %s, scalable dimension: %s", in.ServiceNamespace, in.ResourceId, in.ScalableDimension)
	}
	key := policyKey(in.ServiceNamespace, in.ResourceId, in.ScalableDimension, in.PolicyName)
	p := &policyRec{Name: in.PolicyName, Namespace: in.ServiceNamespace, ResourceID: in.ResourceId,
		Dimension: in.ScalableDimension, Type: in.PolicyType, Created: time.Now().UTC()}
	if old := e.st.Policies[key]; old != nil {
		p.Arn, p.Created, p.LastFired = old.Arn, old.Created, old.LastFired
		p.setPolicyState(old.policyState())
	} else {
		p.Arn = arn("autoscaling", fmt.Sprintf("scalingPolicy:%s:resource/%s/%s:policyName/%s", newID(), in.ServiceNamespace, in.ResourceId, in.PolicyName))
	}
	// The model gives the cooldowns no range; a negative one has no meaning, and the emulator refuses it with the
	// model's wording (the constraint is the emulator's: AWS documents no minimum).
	for member, v := range map[string]*int{
		"stepScalingPolicyConfiguration.cooldown":                   stepCooldown(in.StepScalingPolicyConfiguration),
		"targetTrackingScalingPolicyConfiguration.scaleOutCooldown": ttCooldown(in.TargetTrackingScalingPolicyConfiguration, true),
		"targetTrackingScalingPolicyConfiguration.scaleInCooldown":  ttCooldown(in.TargetTrackingScalingPolicyConfiguration, false),
	} {
		if v != nil && *v < 0 {
			return nil, aasValidation("1 validation error detected: Value '%d' at '%s' failed to satisfy constraint: Member must have value greater than or equal to 0", *v, member)
		}
	}
	switch in.PolicyType {
	case "StepScaling":
		c := in.StepScalingPolicyConfiguration
		if c == nil || len(c.StepAdjustments) == 0 {
			return nil, aasValidation("StepScalingPolicyConfiguration with at least one step adjustment is required for a StepScaling policy.")
		}
		if c.AdjustmentType == "" {
			// "AdjustmentType is required if you are adding a new step scaling policy configuration."
			return nil, aasValidation("AdjustmentType is required: one of %s.", strings.Join(enumAdjustmentType, ", "))
		}
		if err := aasEnum("stepScalingPolicyConfiguration.adjustmentType", c.AdjustmentType, enumAdjustmentType); err != nil {
			return nil, err
		}
		if err := aasEnum("stepScalingPolicyConfiguration.metricAggregationType", c.MetricAggregationType, enumAggregation); err != nil {
			return nil, err
		}
		if err := checkStepAdjustments(c.StepAdjustments); err != nil {
			return nil, err
		}
		p.Step = c
	case "TargetTrackingScaling":
		c := in.TargetTrackingScalingPolicyConfiguration
		if c == nil || c.TargetValue == nil {
			return nil, aasValidation("TargetTrackingScalingPolicyConfiguration with a TargetValue is required for a TargetTrackingScaling policy.")
		}
		if *c.TargetValue <= 0 {
			return nil, aasValidation("TargetValue must be greater than 0, got %g.", *c.TargetValue)
		}
		metric, err := trackedMetric(c, endpoint, variant)
		if err != nil {
			return nil, err
		}
		p.TargetTracking = c
		if old := e.st.Policies[key]; old != nil {
			for _, a := range old.OwnAlarms {
				delete(e.st.Alarms, a)
			}
		}
		// The high alarm of a high-resolution metric evaluates its high-resolution datapoints; every other alarm
		// evaluates standard, 1-minute datapoints: "Target tracking will evaluate metrics aggregated at a
		// one-minute granularity for all predefined metrics and custom metrics", and for the high-resolution
		// SageMaker metrics "as the traffic to your models decreases, your policy scales in at the same speed as
		// it would for standard metrics". A standard datapoint is six high-resolution ones (60 s at the default
		// 10-s metric period), so tests that shorten the metric period keep AWS's ratio.
		highRes := int(e.opts.MetricPeriod / time.Second)
		standard := 6 * highRes
		period := standard
		if pm := c.PredefinedMetricSpecification; pm != nil && pm.PredefinedMetricType == predefinedHighRes {
			period = highRes
		}
		high := putMetricAlarmInput{
			AlarmName:        fmt.Sprintf("TargetTracking-%s-AlarmHigh-%s", in.ResourceId, newID()),
			AlarmDescription: "DO NOT EDIT OR DELETE. For TargetTrackingScaling policy " + p.Arn + ".",
			AlarmActions:     []string{p.Arn}, Namespace: metric.Namespace, MetricName: metric.MetricName,
			Dimensions: metric.Dimensions, Statistic: metric.Statistic, Period: period, EvaluationPeriods: 3,
			DatapointsToAlarm: 3, Threshold: c.TargetValue, ComparisonOperator: "GreaterThanThreshold",
		}
		a, apiErr := e.putAlarmLocked(high)
		if apiErr != nil {
			return nil, apiErr
		}
		p.OwnAlarms = []string{a.Name}
		if c.DisableScaleIn == nil || !*c.DisableScaleIn {
			low := high
			low.AlarmName = fmt.Sprintf("TargetTracking-%s-AlarmLow-%s", in.ResourceId, newID())
			low.Period, low.EvaluationPeriods, low.DatapointsToAlarm = standard, 15, 15
			low.Threshold = ptr(*c.TargetValue * 0.9)
			low.ComparisonOperator = "LessThanThreshold"
			a, apiErr := e.putAlarmLocked(low)
			if apiErr != nil {
				return nil, apiErr
			}
			p.OwnAlarms = append(p.OwnAlarms, a.Name)
		}
	default:
		return nil, aasValidation("the emulator supports the policy types StepScaling and TargetTrackingScaling, not %q", in.PolicyType)
	}
	e.st.Policies[key] = p
	e.saveLocked()
	return map[string]any{"PolicyARN": p.Arn, "Alarms": e.policyAlarmsLocked(p)}, nil
}

// maxStepAdjustments is Application Auto Scaling's quota "Step adjustments per step scaling policy", 20 by
// default (Quotas for Application Auto Scaling, user guide).
const maxStepAdjustments = 20

// stepsMember is how validation messages name a step scaling policy's step adjustments.
const stepsMember = "stepScalingPolicyConfiguration.stepAdjustments"

// checkStepAdjustments refuses step adjustments that break the rules of StepAdjustment (API reference):
// "There are a few rules for the step adjustments for your step policy:
//   - The ranges of your step adjustments can't overlap or have a gap.
//   - At most one step adjustment can have a null lower bound. If one step adjustment has a negative lower
//     bound, then there must be a step adjustment with a null lower bound.
//   - At most one step adjustment can have a null upper bound. If one step adjustment has a positive upper
//     bound, then there must be a step adjustment with a null upper bound.
//   - The upper and lower bound can't be null in the same step adjustment."
//
// and MetricIntervalUpperBound: "The upper bound must be greater than the lower bound." Each answer is a
// ValidationException. So is a policy of more than maxStepAdjustments steps, checked first, so that a request
// of thousands of steps costs no more than a count: AWS documents no error code for it, and its wording is
// AWS's as CloudFormation relayed it (aws/aws-cdk#26215). The emulator does not answer the quota's
// LimitExceededException ("A per-account resource limit is exceeded."): the SDKs retry that code as a throttle
// (aws-sdk-go-v2 retry.DefaultThrottleErrorCodes), and a request over the limit never succeeds. Steps are
// numbered from 1 in the order given, as validation messages number list members.
func checkStepAdjustments(steps []stepAdjustment) *apiError {
	if len(steps) > maxStepAdjustments {
		return aasValidation("There can be at most %d step adjustments per scaling policy: %s has %d.", maxStepAdjustments, stepsMember, len(steps))
	}
	nullLower, nullUpper := 0, 0
	negativeLower, positiveUpper := 0, 0
	for i, s := range steps {
		lo, hi := s.MetricIntervalLowerBound, s.MetricIntervalUpperBound
		switch {
		case lo == nil && hi == nil:
			// Application Auto Scaling's wording, as the AWS provider for Terraform relayed it
			// (hashicorp/terraform-provider-aws#4812).
			return aasValidation("Both lower and upper bounds of a step adjustment cannot be left unspecified: %s.%d.member.", stepsMember, i+1)
		case lo != nil && hi != nil && *hi <= *lo:
			return aasValidation("The upper bound must be greater than the lower bound: %s.%d.member has lower bound %s and upper bound %s.",
				stepsMember, i+1, num(*lo), num(*hi))
		}
		if lo == nil {
			nullLower++
		} else if *lo < 0 {
			negativeLower = i + 1
		}
		if hi == nil {
			nullUpper++
		} else if *hi > 0 {
			positiveUpper = i + 1
		}
	}
	switch {
	case nullLower > 1:
		return aasValidation("At most one step adjustment can have a null lower bound: %d of %s have none.", nullLower, stepsMember)
	case nullUpper > 1:
		return aasValidation("At most one step adjustment can have a null upper bound: %d of %s have none.", nullUpper, stepsMember)
	case negativeLower > 0 && nullLower == 0:
		return aasValidation("There must be a step adjustment with a null lower bound when one has a negative lower bound: %s.%d.member has one.", stepsMember, negativeLower)
	case positiveUpper > 0 && nullUpper == 0:
		// EC2 Auto Scaling words the same rule "There must be a StepAdjustment with an unspecified upper bound (i.e.,
		// upper bound is null) when one StepAdjustment has a positive upper bound" (hashicorp/terraform-provider-aws#9077).
		return aasValidation("There must be a step adjustment with a null upper bound when one has a positive upper bound: %s.%d.member has one.", stepsMember, positiveUpper)
	}
	// In the order of their ranges (a null lower bound is minus infinity), each range must end where the next
	// begins.
	order := make([]int, len(steps))
	for i := range order {
		order[i] = i
	}
	lower := func(i int) float64 {
		if b := steps[i].MetricIntervalLowerBound; b != nil {
			return *b
		}
		return math.Inf(-1)
	}
	sort.SliceStable(order, func(a, b int) bool { return lower(order[a]) < lower(order[b]) })
	for k := 1; k < len(order); k++ {
		prev, cur := order[k-1], order[k]
		end, begin := steps[prev].MetricIntervalUpperBound, lower(cur)
		switch {
		case end == nil || *end > begin:
			return aasValidation("The ranges of step adjustments can't overlap: %s.%d.member %s and %s.%d.member %s overlap.",
				stepsMember, prev+1, stepRange(steps[prev]), stepsMember, cur+1, stepRange(steps[cur]))
		case *end < begin:
			return aasValidation("The ranges of step adjustments can't have a gap: %s.%d.member %s and %s.%d.member %s leave one.",
				stepsMember, prev+1, stepRange(steps[prev]), stepsMember, cur+1, stepRange(steps[cur]))
		}
	}
	return nil
}

// stepRange shows a step adjustment's range, a null bound as infinity: [0, 10), (-inf, 0).
func stepRange(s stepAdjustment) string {
	lo, hi := "(-inf", "+inf)"
	if b := s.MetricIntervalLowerBound; b != nil {
		lo = "[" + num(*b)
	}
	if b := s.MetricIntervalUpperBound; b != nil {
		hi = num(*b) + ")"
	}
	return lo + ", " + hi
}

func stepCooldown(c *stepConfig) *int {
	if c == nil {
		return nil
	}
	return c.Cooldown
}

func ttCooldown(c *targetTrackingConfig, out bool) *int {
	if c == nil {
		return nil
	}
	if out {
		return c.ScaleOutCooldown
	}
	return c.ScaleInCooldown
}

// trackedMetric resolves the metric a target tracking policy follows.
func trackedMetric(c *targetTrackingConfig, endpoint, variant string) (customizedMetric, *apiError) {
	if pm := c.PredefinedMetricSpecification; pm != nil {
		if err := aasEnum("targetTrackingScalingPolicyConfiguration.predefinedMetricSpecification.predefinedMetricType", pm.PredefinedMetricType, enumMetricType); err != nil {
			return customizedMetric{}, err
		}
		if pm.PredefinedMetricType == predefinedHighRes {
			return customizedMetric{Namespace: namespaceSageMaker, MetricName: metricConcurrent,
				Dimensions: endpointDims(endpoint, variant), Statistic: "Maximum"}, nil
		}
		return customizedMetric{}, aasValidation("the emulator supports the predefined metric %s only, not %q", predefinedHighRes, pm.PredefinedMetricType)
	}
	if cm := c.CustomizedMetricSpecification; cm != nil {
		if len(cm.Metrics) > 0 {
			return customizedMetric{}, aasValidation("the emulator does not support metric math in CustomizedMetricSpecification")
		}
		if err := aasEnum("targetTrackingScalingPolicyConfiguration.customizedMetricSpecification.statistic", cm.Statistic, enumStatistic); err != nil {
			return customizedMetric{}, err
		}
		if cm.MetricName == "" || cm.Namespace == "" || cm.Statistic == "" {
			return customizedMetric{}, aasValidation("CustomizedMetricSpecification needs MetricName, Namespace and Statistic.")
		}
		return *cm, nil
	}
	return customizedMetric{}, aasValidation("A target tracking policy needs PredefinedMetricSpecification or CustomizedMetricSpecification.")
}

// policyAlarmsLocked lists the alarms that trigger a policy: the ones it owns and any whose actions name it.
func (e *Emulator) policyAlarmsLocked(p *policyRec) []map[string]any {
	out := []map[string]any{}
	names := make([]string, 0, len(e.st.Alarms))
	for n := range e.st.Alarms {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := e.st.Alarms[n]
		if contains(p.OwnAlarms, n) || contains(a.AlarmActions, p.Arn) {
			out = append(out, map[string]any{"AlarmName": a.Name, "AlarmARN": a.Arn})
		}
	}
	return out
}

func (e *Emulator) describeScalingPolicies(dec decoder) (any, *apiError) {
	var in struct {
		targetFilter
		PolicyNames []string
		MaxResults  *int
		NextToken   *string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if err := checkFilter(in.targetFilter); err != nil {
		return nil, err
	}
	limit, apiErr := pageSize(in.MaxResults, 10)
	if apiErr != nil {
		return nil, apiErr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var list []*policyRec
	for _, p := range e.st.Policies {
		if !in.matches(p.Namespace, p.ResourceID, p.Dimension) || (len(in.PolicyNames) > 0 && !contains(in.PolicyNames, p.Name)) {
			continue
		}
		list = append(list, p)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name+"|"+list[i].ResourceID < list[j].Name+"|"+list[j].ResourceID })
	from, apiErr := pageStart(in.NextToken, "policies", len(list), func(i int) string { return list[i].Arn })
	if apiErr != nil {
		return nil, apiErr
	}
	out := make([]map[string]any, 0, min(limit, len(list)))
	for _, p := range list[from:min(from+limit, len(list))] {
		m := map[string]any{
			"PolicyARN": p.Arn, "PolicyName": p.Name, "ServiceNamespace": p.Namespace, "ResourceId": p.ResourceID,
			"ScalableDimension": p.Dimension, "PolicyType": p.Type, "CreationTime": newEpoch(p.Created),
			"Alarms": e.policyAlarmsLocked(p),
		}
		if p.Step != nil {
			m["StepScalingPolicyConfiguration"] = p.Step
		}
		if p.TargetTracking != nil {
			m["TargetTrackingScalingPolicyConfiguration"] = p.TargetTracking
		}
		out = append(out, m)
	}
	resp := map[string]any{"ScalingPolicies": out}
	if from+limit < len(list) {
		resp["NextToken"] = pageToken("policies", list[from+limit-1].Arn)
	}
	return resp, nil
}

func (e *Emulator) deleteScalingPolicy(dec decoder) (any, *apiError) {
	var in struct {
		targetInput
		PolicyName string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if _, _, err := checkTarget(in.targetInput); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	key := policyKey(in.ServiceNamespace, in.ResourceId, in.ScalableDimension, in.PolicyName)
	p, ok := e.st.Policies[key]
	if !ok {
		return nil, aasNotFound("No scaling policy found for service namespace: %s, resource ID: %s, scalable dimension: %s, policy name: %s", in.ServiceNamespace, in.ResourceId, in.ScalableDimension, in.PolicyName)
	}
	e.deletePolicyLocked(key, p)
	e.saveLocked()
	return map[string]any{}, nil
}

func (e *Emulator) describeScalingActivities(dec decoder) (any, *apiError) {
	var in struct {
		targetFilter
		MaxResults                 *int
		NextToken                  *string
		IncludeNotScaledActivities bool
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if err := checkFilter(in.targetFilter); err != nil {
		return nil, err
	}
	limit, apiErr := pageSize(in.MaxResults, 50)
	if apiErr != nil {
		return nil, apiErr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.settleActivitiesLocked(time.Now()) {
		e.saveLocked()
	}
	// Newest first, as Application Auto Scaling lists them.
	var list []*activityRec
	for i := len(e.st.Activities) - 1; i >= 0; i-- {
		a := e.st.Activities[i]
		if !in.matches(a.Namespace, a.ResourceID, a.Dimension) || len(a.NotScaled) > 0 && !in.IncludeNotScaledActivities {
			continue
		}
		list = append(list, a)
	}
	from, apiErr := pageStart(in.NextToken, "activities", len(list), func(i int) string { return list[i].ID })
	if apiErr != nil {
		return nil, apiErr
	}
	out := []map[string]any{}
	for _, a := range list[from:min(from+limit, len(list))] {
		act := map[string]any{
			"ActivityId": a.ID, "ServiceNamespace": a.Namespace, "ResourceId": a.ResourceID,
			"ScalableDimension": a.Dimension, "Description": a.Description, "Cause": a.Cause,
			"StartTime": newEpoch(a.Start), "StatusCode": a.StatusCode,
		}
		if !a.End.IsZero() {
			act["EndTime"] = newEpoch(a.End)
		}
		if a.Message != "" {
			act["StatusMessage"] = a.Message
		}
		if len(a.NotScaled) > 0 {
			act["NotScaledReasons"] = a.NotScaled
		}
		out = append(out, act)
	}
	resp := map[string]any{"ScalingActivities": out}
	if from+limit < len(list) {
		resp["NextToken"] = pageToken("activities", list[from+limit-1].ID)
	}
	return resp, nil
}

// Activity status codes (ScalingActivityStatusCode).
const (
	activityPending     = "Pending"
	activityInProgress  = "InProgress"
	activitySuccessful  = "Successful"
	activityOverridden  = "Overridden"
	activityUnfulfilled = "Unfulfilled"
	activityFailed      = "Failed"
)

// recordActivityLocked records a new scaling activity, Pending: "All scaling activities have a Pending status
// before the target service responds. After the target responds, the status of the scaling activity changes
// to InProgress." (Scaling activities for Application Auto Scaling).
func (e *Emulator) recordActivityLocked(t *targetRec, description, cause string) *activityRec {
	a := &activityRec{ID: newID(), Namespace: t.Namespace, ResourceID: t.ResourceID, Dimension: t.Dimension,
		Description: description, Cause: cause, Start: time.Now().UTC(), StatusCode: activityPending}
	e.st.Activities = append(e.st.Activities, a)
	if n := len(e.st.Activities); n > 1000 {
		e.st.Activities = e.st.Activities[n-1000:]
	}
	return a
}

// recordNotScaledLocked records a not scaled activity, as Application Auto Scaling does when it decides not to
// scale ("Not scaled activities are activities that aren't completed or started for various reasons"). A
// decision that repeats the target's newest activity (same cause, same reason) is not recorded again, so an
// alarm that stays in ALARM at the maximum leaves one activity, not one per evaluation. It reports whether it
// recorded one.
func (e *Emulator) recordNotScaledLocked(t *targetRec, cause string, r autoscale.NotScaledReason) bool {
	for i := len(e.st.Activities) - 1; i >= 0; i-- {
		a := e.st.Activities[i]
		if a.Namespace != t.Namespace || a.ResourceID != t.ResourceID || a.Dimension != t.Dimension {
			continue
		}
		if len(a.NotScaled) == 1 && a.NotScaled[0].Code == r.Code && a.Cause == cause {
			return false
		}
		break
	}
	nr := notScaledReason{Code: r.Code}
	switch r.Code {
	case autoscale.AlreadyAtMaxCapacity:
		nr.MaxCapacity = ptr(r.MaxCapacity)
	case autoscale.AlreadyAtMinCapacity:
		nr.MinCapacity = ptr(r.MinCapacity)
	default:
		nr.CurrentCapacity = ptr(r.CurrentCapacity)
	}
	a := e.recordActivityLocked(t, "Attempting to scale due to alarm triggered", cause)
	a.StatusCode, a.End, a.NotScaled = activityFailed, a.Start, []notScaledReason{nr}
	return true
}

// settleActivitiesLocked completes the InProgress activities whose endpoint update has finished: Successful
// with the EndTime when the endpoint returned to InService at the activity's capacity, Overridden when a newer
// change replaced the capacity ("The desired capacity was updated by a newer scaling event"), Unfulfilled when
// SageMaker rolled the change back ("the target service cannot fulfill the request"). It reports whether any
// activity changed; e.mu must be held.
func (e *Emulator) settleActivitiesLocked(now time.Time) bool {
	changed := false
	for _, a := range e.st.Activities {
		if a.StatusCode != activityInProgress {
			continue
		}
		endpoint, variant, err := checkTarget(targetInput{ServiceNamespace: a.Namespace, ResourceId: a.ResourceID, ScalableDimension: a.Dimension})
		ep := e.st.Endpoints[endpoint]
		switch {
		case err != nil || ep == nil || ep.Variant != variant:
			a.StatusCode, a.End = activityFailed, now.UTC()
			a.Message = fmt.Sprintf("Failed to set desired instance count to %d. Reason: the endpoint %s no longer exists.", a.Capacity, endpoint)
		case ep.Status == statusInService && ep.Desired == a.Capacity && len(ep.Instances) == a.Capacity:
			a.StatusCode, a.End = activitySuccessful, ep.Modified
			if a.End.Before(a.Start) {
				a.End = a.Start
			}
			a.Message = fmt.Sprintf("Successfully set desired instance count to %d. Change successfully fulfilled by sagemaker.", a.Capacity)
		case ep.Desired != a.Capacity && ep.FailureReason == "":
			a.StatusCode, a.End = activityOverridden, now.UTC()
			a.Message = fmt.Sprintf("The desired instance count %d was replaced by %d before the change was fulfilled.", a.Capacity, ep.Desired)
		case ep.Status == statusInService || ep.Status == statusFailed:
			a.StatusCode, a.End = activityUnfulfilled, now.UTC()
			a.Message = fmt.Sprintf("Failed to set desired instance count to %d. Reason: %s", a.Capacity, ep.FailureReason)
		default:
			continue
		}
		e.activityEndedLocked(a)
		changed = true
	}
	return changed
}

// activityEndedLocked starts the cooldown of the policy whose decision started activity a, from a's EndTime:
// "The amount of time, in seconds, after a scale-out activity completes before another scale-out activity can
// start" (ScaleOutCooldown, and ScaleInCooldown alike). AWS documents the start for a successful activity
// ("after Application Auto Scaling successfully scales out, it starts to calculate the cooldown time"); the
// emulator starts it from the EndTime of a failed, unfulfilled or overridden one too. e.mu must be held.
func (e *Emulator) activityEndedLocked(a *activityRec) {
	p := e.st.Policies[a.Policy]
	if a.Policy == "" || p == nil {
		return
	}
	st := p.policyState()
	st.Completed(a.Out, a.End)
	p.setPolicyState(st)
}

// scaleLoop evaluates every alarm once per metric period and applies the policies of alarms in ALARM, as
// Application Auto Scaling keeps invoking a policy while its alarm stays in ALARM.
func (e *Emulator) scaleLoop() {
	t := time.NewTicker(e.opts.MetricPeriod)
	defer t.Stop()
	for {
		select {
		case <-e.done:
			return
		case now := <-t.C:
			e.evaluate(now)
		}
	}
}

func (e *Emulator) evaluate(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	changed := e.settleActivitiesLocked(now)
	names := make([]string, 0, len(e.st.Alarms))
	for n := range e.st.Alarms {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if e.evaluateAlarmLocked(e.st.Alarms[n], now) {
			changed = true
		}
	}
	keys := make([]string, 0, len(e.st.Targets))
	for k := range e.st.Targets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if e.scaleTargetLocked(e.st.Targets[k], names, now) {
			changed = true
		}
	}
	if changed {
		e.saveLocked()
	}
}

// scaleTargetLocked makes one scaling decision for a target with autoscale.Decide, from its policies, the
// alarms in ALARM that invoke them and their cooldowns, and applies it; it reports whether anything changed.
// e.mu must be held.
func (e *Emulator) scaleTargetLocked(t *targetRec, alarmNames []string, now time.Time) bool {
	endpoint, variant, err := checkTarget(targetInput{ServiceNamespace: t.Namespace, ResourceId: t.ResourceID, ScalableDimension: t.Dimension})
	if err != nil {
		return false
	}
	ep := e.st.Endpoints[endpoint]
	if ep == nil || ep.Variant != variant || ep.Status != statusInService {
		// Application Auto Scaling waits while the endpoint is not InService.
		return false
	}
	prefix := targetKey(t.Namespace, t.ResourceID, t.Dimension) + "|"
	var recs []*policyRec
	for k, p := range e.st.Policies {
		if strings.HasPrefix(k, prefix) {
			recs = append(recs, p)
		}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Name < recs[j].Name })
	in := autoscale.Input{Now: now, Capacity: ep.Desired, Min: t.Min, Max: t.Max,
		ScaleOutSuspended: t.Suspended.DynamicScalingOutSuspended != nil && *t.Suspended.DynamicScalingOutSuspended,
		ScaleInSuspended:  t.Suspended.DynamicScalingInSuspended != nil && *t.Suspended.DynamicScalingInSuspended,
	}
	invoked := false
	for _, p := range recs {
		pol := policyInput(p, e.defaultCooldownS())
		for _, n := range alarmNames {
			a := e.st.Alarms[n]
			if a.State != alarmAlarm || !a.ActionsEnabled || !contains(a.AlarmActions, p.Arn) {
				continue
			}
			// The emulator's alarm evaluation keeps the newest datapoint (LastValue): it is the one datapoint
			// the decision sees, so a step policy's MetricAggregationType has one value to aggregate.
			pol.Alarms = append(pol.Alarms, autoscale.Alarm{Name: a.Name, Threshold: a.Threshold,
				ScaleOut: strings.HasPrefix(a.ComparisonOperator, "GreaterThan"), Datapoints: []float64{a.LastValue}})
			invoked = true
		}
		in.Policies = append(in.Policies, pol)
	}
	if !invoked {
		return false
	}
	d := autoscale.Decide(in)
	for i, p := range recs {
		p.setPolicyState(d.States[i])
	}
	cause := fmt.Sprintf("monitor alarm %s in state ALARM triggered policy %s", d.Alarm, d.Policy)
	switch {
	case d.Scale:
		e.log.Printf("scaling %s: %d -> %d: %s", t.ResourceID, ep.Desired, d.Capacity, d.Reason)
		e.applyCapacityLocked(t, ep, d.Capacity, cause, policyKey(t.Namespace, t.ResourceID, t.Dimension, d.Policy))
	case d.NotScaled != nil:
		if e.recordNotScaledLocked(t, cause, *d.NotScaled) {
			e.log.Printf("scaling %s: not scaled (%s): %s", t.ResourceID, d.NotScaled.Code, d.Reason)
		}
	}
	return true
}

// defaultCooldownS is the cooldown, in seconds, of a policy that gives none: Application Auto Scaling's 300 s
// for SageMaker endpoint variants (autoscale.DefaultCooldown), divided by the emulator's CloudWatch compression
// (docs/design.md, "Compressed CloudWatch time").
func (e *Emulator) defaultCooldownS() int {
	return int(autoscale.Compress(autoscale.DefaultCooldown, e.compression()) / time.Second)
}

// policyInput is a policy record as autoscale.Decide takes it, with defaultCooldownS (Emulator.defaultCooldownS)
// where the policy gives no cooldown.
func policyInput(p *policyRec, defaultCooldownS int) autoscale.Policy {
	pol := autoscale.Policy{Name: p.Name, State: p.policyState()}
	switch {
	case p.TargetTracking != nil:
		c := p.TargetTracking
		pol.TargetTracking = &autoscale.TargetTracking{TargetValue: *c.TargetValue,
			ScaleOutCooldown: seconds(c.ScaleOutCooldown, defaultCooldownS), ScaleInCooldown: seconds(c.ScaleInCooldown, defaultCooldownS),
			DisableScaleIn: c.DisableScaleIn != nil && *c.DisableScaleIn}
	case p.Step != nil:
		c := p.Step
		st := &autoscale.StepScaling{AdjustmentType: c.AdjustmentType, Cooldown: seconds(c.Cooldown, defaultCooldownS), Aggregation: c.MetricAggregationType}
		if c.MinAdjustmentMagnitude != nil {
			st.MinAdjustmentMagnitude = *c.MinAdjustmentMagnitude
		}
		for _, s := range c.StepAdjustments {
			st.Steps = append(st.Steps, autoscale.StepAdjustment{Lower: s.MetricIntervalLowerBound, Upper: s.MetricIntervalUpperBound, Adjustment: s.ScalingAdjustment})
		}
		pol.Step = st
	}
	return pol
}

// applyCapacityLocked sets the endpoint's desired count and records the scaling activity: Pending, then
// InProgress once SageMaker accepted the change (settleActivitiesLocked completes it when the endpoint update
// finishes), or Failed with SageMaker's answer (e.g. ResourceLimitExceeded over the instance quota), as
// Application Auto Scaling records an activity the service refused. policy is the key of the policy that
// decided ("" for the target's bounds): its cooldown starts when the activity ends. e.mu must be held.
func (e *Emulator) applyCapacityLocked(t *targetRec, ep *endpointRec, want int, cause, policy string) {
	a := e.recordActivityLocked(t, fmt.Sprintf("Setting desired instance count to %d.", want), cause)
	a.Capacity, a.Policy, a.Out = want, policy, want > ep.Desired
	if err := e.setDesiredLocked(ep, want); err != nil {
		a.StatusCode, a.End = activityFailed, time.Now().UTC()
		e.activityEndedLocked(a)
		a.Message = fmt.Sprintf("Failed to set desired instance count to %d. Reason: %s (Service: AmazonSageMaker; Status Code: %d; Error Code: %s)", want, err.Message, err.Status, err.Code)
		e.log.Printf("scaling %s: %s", t.ResourceID, a.Message)
		e.saveLocked()
		return
	}
	a.StatusCode = activityInProgress
	a.Message = fmt.Sprintf("Successfully set desired instance count to %d. Waiting for change to be fulfilled by sagemaker.", want)
	e.settleActivitiesLocked(time.Now())
	e.saveLocked()
}

// pageSize is the page size a Describe call asks for with MaxResults: "This value can be between 1 and 50. The
// default value is 50." (10 for DescribeScalingPolicies).
func pageSize(maxResults *int, limit int) (int, *apiError) {
	if maxResults == nil {
		return limit, nil
	}
	if *maxResults < 1 || *maxResults > limit {
		return 0, aasValidation("1 validation error detected: Value '%d' at 'maxResults' failed to satisfy constraint: Member must have value between 1 and %d", *maxResults, limit)
	}
	return *maxResults, nil
}

// pageToken is the NextToken after the item with key last in the list kind: opaque to the caller.
func pageToken(kind, last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + "\x00" + last))
}

// pageStart is the index a page starts at: 0 without a token, else the index after the item the token names
// (key(i) gives the key of item i). A token that is not one of the emulator's for this list, or names an item
// no longer listed, is answered InvalidNextTokenException ("The next token supplied was invalid.").
func pageStart(token *string, kind string, n int, key func(int) string) (int, *apiError) {
	if token == nil {
		return 0, nil
	}
	invalid := errorf("InvalidNextTokenException", http.StatusBadRequest, "The next token supplied was invalid.")
	b, err := base64.RawURLEncoding.DecodeString(*token)
	if err != nil {
		return 0, invalid
	}
	k, last, ok := strings.Cut(string(b), "\x00")
	if !ok || k != kind {
		return 0, invalid
	}
	for i := range n {
		if key(i) == last {
			return i + 1, nil
		}
	}
	return 0, invalid
}

func seconds(v *int, def int) time.Duration {
	if v == nil {
		return time.Duration(def) * time.Second
	}
	return time.Duration(*v) * time.Second
}
