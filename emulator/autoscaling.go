package emulator

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"
)

// The scalable dimension and namespace of SageMaker variants, the only targets the emulator scales.
const (
	namespaceSM       = "sagemaker"
	dimensionVariant  = "sagemaker:variant:DesiredInstanceCount"
	defaultCooldownS  = 300
	predefinedHighRes = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
	predefinedConc    = "SageMakerVariantConcurrentRequestsPerModel"
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

// checkTarget validates the namespace, resource id and dimension of a request and returns the endpoint and
// variant the resource id names.
func checkTarget(in targetInput) (endpoint, variant string, err *apiError) {
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
		t.RoleARN = arn("iam", "role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint")
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
			fmt.Sprintf("minimum capacity %d, maximum capacity %d: the current capacity %d is outside the bounds", t.Min, t.Max, ep.Desired))
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
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if err := requireNamespace(in.ServiceNamespace); err != nil {
		return nil, err
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
	sort.Slice(list, func(i, j int) bool { return list[i].ResourceID < list[j].ResourceID })
	out := make([]map[string]any, 0, len(list))
	for _, t := range list {
		out = append(out, targetView(t))
	}
	return map[string]any{"ScalableTargets": out}, nil
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
	} else {
		p.Arn = arn("autoscaling", fmt.Sprintf("scalingPolicy:%s:resource/%s/%s:policyName/%s", newID(), in.ServiceNamespace, in.ResourceId, in.PolicyName))
	}
	switch in.PolicyType {
	case "StepScaling":
		c := in.StepScalingPolicyConfiguration
		if c == nil || len(c.StepAdjustments) == 0 {
			return nil, aasValidation("StepScalingPolicyConfiguration with at least one step adjustment is required for a StepScaling policy.")
		}
		switch c.AdjustmentType {
		case "ChangeInCapacity", "PercentChangeInCapacity", "ExactCapacity":
		default:
			return nil, aasValidation("AdjustmentType must be ChangeInCapacity, PercentChangeInCapacity or ExactCapacity, not %q.", c.AdjustmentType)
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
		period := int(e.opts.MetricPeriod / time.Second)
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
			low.EvaluationPeriods, low.DatapointsToAlarm = 15, 15
			low.Threshold = ptr(*c.TargetValue * 0.9)
			low.ComparisonOperator = "LessThanThreshold"
			a, apiErr := e.putAlarmLocked(low)
			if apiErr != nil {
				return nil, apiErr
			}
			p.OwnAlarms = append(p.OwnAlarms, a.Name)
		}
	default:
		return nil, aasValidation("PolicyType must be StepScaling or TargetTrackingScaling, not %q.", in.PolicyType)
	}
	e.st.Policies[key] = p
	e.saveLocked()
	return map[string]any{"PolicyARN": p.Arn, "Alarms": e.policyAlarmsLocked(p)}, nil
}

// trackedMetric resolves the metric a target tracking policy follows.
func trackedMetric(c *targetTrackingConfig, endpoint, variant string) (customizedMetric, *apiError) {
	if pm := c.PredefinedMetricSpecification; pm != nil {
		switch pm.PredefinedMetricType {
		case predefinedHighRes, predefinedConc:
			return customizedMetric{Namespace: namespaceSageMaker, MetricName: metricConcurrent,
				Dimensions: endpointDims(endpoint, variant), Statistic: "Maximum"}, nil
		}
		return customizedMetric{}, aasValidation("the emulator supports the predefined metrics %s and %s, not %q", predefinedHighRes, predefinedConc, pm.PredefinedMetricType)
	}
	if cm := c.CustomizedMetricSpecification; cm != nil {
		if len(cm.Metrics) > 0 {
			return customizedMetric{}, aasValidation("the emulator does not support metric math in CustomizedMetricSpecification")
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
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if err := requireNamespace(in.ServiceNamespace); err != nil {
		return nil, err
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
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	out := make([]map[string]any, 0, len(list))
	for _, p := range list {
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
	return map[string]any{"ScalingPolicies": out}, nil
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
		MaxResults int
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if err := requireNamespace(in.ServiceNamespace); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []map[string]any{}
	// Newest first, as Application Auto Scaling lists them.
	for i := len(e.st.Activities) - 1; i >= 0; i-- {
		a := e.st.Activities[i]
		if !in.matches(a.Namespace, a.ResourceID, a.Dimension) {
			continue
		}
		act := map[string]any{
			"ActivityId": a.ID, "ServiceNamespace": a.Namespace, "ResourceId": a.ResourceID,
			"ScalableDimension": a.Dimension, "Description": a.Description, "Cause": a.Cause,
			"StartTime": newEpoch(a.Start), "EndTime": newEpoch(a.End), "StatusCode": a.StatusCode,
		}
		if a.Message != "" {
			act["StatusMessage"] = a.Message
		}
		out = append(out, act)
		if in.MaxResults > 0 && len(out) == in.MaxResults {
			break
		}
	}
	return map[string]any{"ScalingActivities": out}, nil
}

func (e *Emulator) recordActivityLocked(t *targetRec, description, cause string) {
	now := time.Now().UTC()
	e.st.Activities = append(e.st.Activities, &activityRec{ID: newID(), Namespace: t.Namespace, ResourceID: t.ResourceID,
		Dimension: t.Dimension, Description: description, Cause: cause, Start: now, End: now, StatusCode: "Successful"})
	if n := len(e.st.Activities); n > 1000 {
		e.st.Activities = e.st.Activities[n-1000:]
	}
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
	changed := false
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
	for _, n := range names {
		a := e.st.Alarms[n]
		if a.State != alarmAlarm || !a.ActionsEnabled {
			continue
		}
		for _, action := range a.AlarmActions {
			for _, p := range e.st.Policies {
				if p.Arn == action {
					e.applyPolicyLocked(p, a, now)
				}
			}
		}
	}
	if changed {
		e.saveLocked()
	}
}

// applyPolicyLocked runs one scaling policy triggered by an alarm in ALARM, with the Application Auto Scaling
// rules: bounds, suspension and cooldowns; e.mu must be held.
func (e *Emulator) applyPolicyLocked(p *policyRec, a *alarmRec, now time.Time) {
	t := e.st.Targets[targetKey(p.Namespace, p.ResourceID, p.Dimension)]
	if t == nil {
		return
	}
	endpoint, variant, err := checkTarget(targetInput{ServiceNamespace: p.Namespace, ResourceId: p.ResourceID, ScalableDimension: p.Dimension})
	if err != nil {
		return
	}
	ep := e.st.Endpoints[endpoint]
	if ep == nil || ep.Variant != variant || ep.Status != statusInService {
		// Application Auto Scaling waits while the endpoint is not InService.
		return
	}
	current := ep.Desired
	want := current
	var outCooldown, inCooldown time.Duration
	switch {
	case p.TargetTracking != nil:
		c := p.TargetTracking
		want = int(math.Ceil(float64(current) * a.LastValue / *c.TargetValue))
		high := a.ComparisonOperator == "GreaterThanThreshold"
		if high && want <= current || !high && want >= current {
			return
		}
		if !high && c.DisableScaleIn != nil && *c.DisableScaleIn {
			return
		}
		outCooldown = seconds(c.ScaleOutCooldown, defaultCooldownS)
		inCooldown = seconds(c.ScaleInCooldown, defaultCooldownS)
	case p.Step != nil:
		c := p.Step
		delta := a.LastValue - a.Threshold
		adj, ok := stepFor(c.StepAdjustments, delta)
		if !ok {
			return
		}
		switch c.AdjustmentType {
		case "ChangeInCapacity":
			want = current + adj
		case "ExactCapacity":
			want = adj
		case "PercentChangeInCapacity":
			// Rounded as Application Auto Scaling documents: toward zero, except that a change between -1
			// and 1 (but not 0) becomes -1 or 1.
			raw := float64(current) * float64(adj) / 100
			change := int(math.Trunc(raw))
			if change == 0 && raw != 0 {
				change = int(math.Copysign(1, raw))
			}
			if c.MinAdjustmentMagnitude != nil && abs(change) < *c.MinAdjustmentMagnitude {
				change = sign(adj) * *c.MinAdjustmentMagnitude
			}
			want = current + change
		}
		cd := seconds(c.Cooldown, defaultCooldownS)
		if now.Before(p.LastFired.Add(cd)) {
			return
		}
		outCooldown, inCooldown = cd, cd
	default:
		return
	}
	want = min(max(want, t.Min), t.Max)
	if want == current {
		return
	}
	out := want > current
	if out && t.Suspended.DynamicScalingOutSuspended != nil && *t.Suspended.DynamicScalingOutSuspended {
		return
	}
	if !out && t.Suspended.DynamicScalingInSuspended != nil && *t.Suspended.DynamicScalingInSuspended {
		return
	}
	if out && now.Before(t.LastScaleOut.Add(outCooldown)) {
		return
	}
	// Scale-in waits for both its own cooldown and the scale-out cooldown, so a fleet that just grew is not
	// shrunk before the new capacity has had an effect.
	if !out && (now.Before(t.LastScaleIn.Add(inCooldown)) || now.Before(t.LastScaleOut.Add(outCooldown))) {
		return
	}
	if out {
		t.LastScaleOut = now
	} else {
		t.LastScaleIn = now
	}
	p.LastFired = now
	e.applyCapacityLocked(t, ep, want, fmt.Sprintf("monitor alarm %s in state ALARM triggered policy %s", a.Name, p.Name))
}

// applyCapacityLocked sets the endpoint's desired count and records the scaling activity: Successful, or
// Failed with SageMaker's answer (e.g. ResourceLimitExceeded over the instance quota), as Application Auto
// Scaling records an activity the service refused; e.mu must be held.
func (e *Emulator) applyCapacityLocked(t *targetRec, ep *endpointRec, want int, cause string) {
	description := fmt.Sprintf("Setting desired instance count to %d.", want)
	if err := e.setDesiredLocked(ep, want); err != nil {
		e.recordActivityLocked(t, description, cause)
		a := e.st.Activities[len(e.st.Activities)-1]
		a.StatusCode = "Failed"
		a.Message = fmt.Sprintf("Failed to set desired instance count to %d. Reason: %s (Service: AmazonSageMaker; Status Code: %d; Error Code: %s)", want, err.Message, err.Status, err.Code)
		e.log.Printf("scaling %s: %s", t.ResourceID, a.Message)
		e.saveLocked()
		return
	}
	e.recordActivityLocked(t, description, cause)
}

// stepFor picks the step adjustment whose interval (relative to the alarm threshold) holds delta.
func stepFor(steps []stepAdjustment, delta float64) (int, bool) {
	for _, s := range steps {
		lo, hi := math.Inf(-1), math.Inf(1)
		if s.MetricIntervalLowerBound != nil {
			lo = *s.MetricIntervalLowerBound
		}
		if s.MetricIntervalUpperBound != nil {
			hi = *s.MetricIntervalUpperBound
		}
		if delta >= lo && delta < hi || (hi == 0 && delta == 0 && s.MetricIntervalUpperBound != nil) {
			return s.ScalingAdjustment, true
		}
	}
	return 0, false
}

func seconds(v *int, def int) time.Duration {
	if v == nil {
		return time.Duration(def) * time.Second
	}
	return time.Duration(*v) * time.Second
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	if v < 0 {
		return -1
	}
	return 1
}
