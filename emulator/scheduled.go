package emulator

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Scheduled scaling: PutScheduledAction, DescribeScheduledActions and DeleteScheduledAction, and the scheduler
// that runs the actions on the emulator's clock (Options.Clock). The sentences quoted are from the Application
// Auto Scaling API Reference (botocore's application-autoscaling model carries the same text) and from the user
// guide's "Scheduled scaling for Application Auto Scaling" pages.

// scheduledActionRec is one scheduled action, as state.json keeps it.
type scheduledActionRec struct {
	Name       string `json:"name"`
	Arn        string `json:"arn"`
	Namespace  string `json:"namespace"`
	ResourceID string `json:"resource_id"`
	Dimension  string `json:"dimension"`
	Schedule   string `json:"schedule"`
	Timezone   string `json:"timezone,omitempty"`
	// StartTime and EndTime bound a recurring schedule; nil when not given.
	StartTime *time.Time `json:"start_time,omitempty"`
	EndTime   *time.Time `json:"end_time,omitempty"`
	// MinCapacity and MaxCapacity are the ScalableTargetAction; nil members were not given.
	MinCapacity *int      `json:"min_capacity,omitempty"`
	MaxCapacity *int      `json:"max_capacity,omitempty"`
	Created     time.Time `json:"created"`
	// Anchor is when the action was last put: a rate without a StartTime counts its intervals from it.
	Anchor time.Time `json:"anchor"`
	// Next is the instant the action runs next (zero when it will not run again); a restarted emulator runs an
	// action whose Next passed while it was stopped once, at its first tick.
	Next time.Time `json:"next"`
}

func scheduledKey(ns, resourceID, dim, name string) string {
	return targetKey(ns, resourceID, dim) + "|" + name
}

// location is the action's Timezone: "If a time zone is not provided, UTC is used by default."
func (a *scheduledActionRec) location() (*time.Location, error) {
	if a.Timezone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(a.Timezone)
}

// nextAfter is the action's first run strictly after t (zero when none).
func (a *scheduledActionRec) nextAfter(t time.Time) time.Time {
	s, err := parseSchedule(a.Schedule)
	if err != nil {
		return time.Time{}
	}
	loc, err := a.location()
	if err != nil {
		return time.Time{}
	}
	return s.next(t, loc, window{start: a.StartTime, end: a.EndTime, anchor: a.Anchor})
}

// now is the emulator's clock: Options.Clock, or the wall clock.
func (e *Emulator) now() time.Time {
	if e.opts.Clock != nil {
		return e.opts.Clock()
	}
	return time.Now()
}

type scalableTargetAction struct {
	MinCapacity *int `json:"MinCapacity,omitempty"`
	MaxCapacity *int `json:"MaxCapacity,omitempty"`
}

func (e *Emulator) putScheduledAction(dec decoder) (any, *apiError) {
	var in struct {
		targetInput
		ScheduledActionName  string
		Schedule             *string
		Timezone             *string
		StartTime            *epoch
		EndTime              *epoch
		ScalableTargetAction *scalableTargetAction
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if _, _, err := checkTarget(in.targetInput); err != nil {
		return nil, err
	}
	if in.Schedule != nil {
		if _, err := parseSchedule(*in.Schedule); err != nil {
			// The Schedule formats of the API reference: "At expressions - "at(yyyy-mm-ddThh:mm:ss)"", "Rate
			// expressions - "rate(value unit)"", "Cron expressions - "cron(fields)"". The wording is the emulator's.
			return nil, aasValidation("Invalid schedule expression %q: %v", *in.Schedule, err)
		}
	}
	if in.Timezone != nil {
		// "Valid values are the canonical names of the IANA time zones supported by Joda-Time (such as Etc/GMT+9
		// or Pacific/Tahiti)."
		if _, err := time.LoadLocation(*in.Timezone); err != nil || *in.Timezone == "Local" {
			return nil, aasValidation("Invalid timezone %q: use the canonical name of an IANA time zone, such as Etc/GMT+9 or Pacific/Tahiti.", *in.Timezone)
		}
	}
	if in.StartTime != nil && in.EndTime != nil && !in.EndTime.After(in.StartTime.Time) {
		return nil, aasValidation("EndTime (%s) must be after StartTime (%s): they form the boundaries for when the recurring action starts and stops.",
			in.EndTime.UTC().Format(time.RFC3339), in.StartTime.UTC().Format(time.RFC3339))
	}
	if act := in.ScalableTargetAction; act != nil {
		// The capacities of a scalable target: never negative, the minimum never above the maximum ("you must
		// include both sizes to ensure that the new minimum capacity is not greater than the maximum capacity").
		for member, v := range map[string]*int{"scalableTargetAction.minCapacity": act.MinCapacity, "scalableTargetAction.maxCapacity": act.MaxCapacity} {
			if v != nil && *v < 0 {
				return nil, aasValidation("1 validation error detected: Value '%d' at '%s' failed to satisfy constraint: Member must have value greater than or equal to 0", *v, member)
			}
		}
		if act.MinCapacity != nil && act.MaxCapacity != nil && *act.MinCapacity > *act.MaxCapacity {
			return nil, aasValidation("Minimum capacity (%d) cannot be greater than maximum capacity (%d).", *act.MinCapacity, *act.MaxCapacity)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// "You cannot create a scheduled action until you have registered the resource as a scalable target."
	if _, ok := e.st.Targets[targetKey(in.ServiceNamespace, in.ResourceId, in.ScalableDimension)]; !ok {
		return nil, aasNotFound("No scalable target registered for service namespace: %s, resource ID: %s, scalable dimension: %s", in.ServiceNamespace, in.ResourceId, in.ScalableDimension)
	}
	key := scheduledKey(in.ServiceNamespace, in.ResourceId, in.ScalableDimension, in.ScheduledActionName)
	now := e.now().UTC()
	a := e.st.ScheduledActions[key]
	if a == nil {
		// A new action needs a schedule: ScheduledAction's Schedule is required.
		if in.Schedule == nil {
			return nil, aasValidation("Schedule is required when creating a scheduled action: at(yyyy-mm-ddThh:mm:ss), rate(value unit) or cron(fields).")
		}
		if n := e.countScheduledLocked(in.targetInput); n >= maxScheduledActions {
			return nil, aasValidation("There can be at most %d scheduled actions per scalable target: %s has %d.", maxScheduledActions, in.ResourceId, n)
		}
		a = &scheduledActionRec{Name: in.ScheduledActionName, Namespace: in.ServiceNamespace, ResourceID: in.ResourceId,
			Dimension: in.ScalableDimension, Created: now,
			Arn: arn("autoscaling", fmt.Sprintf("scheduledAction:%s:resource/%s/%s:scheduledActionName/%s", newID(), in.ServiceNamespace, in.ResourceId, in.ScheduledActionName))}
	}
	// "To update a scheduled action, specify the parameters that you want to change. If you don't specify start
	// and end times, the old values are deleted."
	if in.Schedule != nil {
		a.Schedule = *in.Schedule
	}
	if in.Timezone != nil {
		a.Timezone = *in.Timezone
	}
	if in.ScalableTargetAction != nil {
		a.MinCapacity, a.MaxCapacity = in.ScalableTargetAction.MinCapacity, in.ScalableTargetAction.MaxCapacity
	}
	a.StartTime, a.EndTime = nil, nil
	if in.StartTime != nil {
		a.StartTime = ptr(in.StartTime.UTC())
	}
	if in.EndTime != nil {
		a.EndTime = ptr(in.EndTime.UTC())
	}
	// The action runs at its instants from the second it was put on (an at expression names whole seconds, so
	// at() of the current second still runs); an instant already past when it was put does not run.
	a.Anchor = now
	a.Next = a.nextAfter(now.Truncate(time.Second).Add(-time.Nanosecond))
	e.st.ScheduledActions[key] = a
	e.saveLocked()
	return map[string]any{}, nil
}

// maxScheduledActions is Application Auto Scaling's quota "Scheduled actions per scalable target", 200, not
// adjustable (Quotas for Application Auto Scaling, user guide). A new action past it is refused with a
// ValidationException, not the quota's LimitExceededException ("A per-account resource limit is exceeded."):
// the SDKs retry that code as a throttle (aws-sdk-go-v2 retry.DefaultThrottleErrorCodes), and a request over
// the quota never succeeds. The wording is the emulator's.
const maxScheduledActions = 200

// countScheduledLocked is the number of scheduled actions of the target. e.mu must be held.
func (e *Emulator) countScheduledLocked(in targetInput) int {
	prefix := targetKey(in.ServiceNamespace, in.ResourceId, in.ScalableDimension) + "|"
	n := 0
	for k := range e.st.ScheduledActions {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

func (e *Emulator) describeScheduledActions(dec decoder) (any, *apiError) {
	var in struct {
		targetFilter
		ScheduledActionNames []string
		MaxResults           *int
		NextToken            *string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if err := checkFilter(in.targetFilter); err != nil {
		return nil, err
	}
	// ScalableDimension: "If you specify a scalable dimension, you must also specify a resource ID."
	if in.ScalableDimension != "" && in.ResourceId == "" {
		return nil, aasValidation("If you specify a scalable dimension, you must also specify a resource ID.")
	}
	// MaxResults: "This value can be between 1 and 50. The default value is 50."
	limit, apiErr := pageSize(in.MaxResults, 50)
	if apiErr != nil {
		return nil, apiErr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// "You can filter the results using the ResourceId, ScalableDimension, and ScheduledActionNames parameters."
	var list []*scheduledActionRec
	for _, a := range e.st.ScheduledActions {
		if !in.matches(a.Namespace, a.ResourceID, a.Dimension) || len(in.ScheduledActionNames) > 0 && !slices.Contains(in.ScheduledActionNames, a.Name) {
			continue
		}
		list = append(list, a)
	}
	// In the order they were created, as AWS's example lists them.
	sort.Slice(list, func(i, j int) bool {
		if !list[i].Created.Equal(list[j].Created) {
			return list[i].Created.Before(list[j].Created)
		}
		return list[i].Arn < list[j].Arn
	})
	from, apiErr := pageStart(in.NextToken, "scheduled", len(list), func(i int) string { return list[i].Arn })
	if apiErr != nil {
		return nil, apiErr
	}
	out := make([]map[string]any, 0, min(limit, len(list)))
	for _, a := range list[from:min(from+limit, len(list))] {
		m := map[string]any{
			"ScheduledActionName": a.Name, "ScheduledActionARN": a.Arn, "ServiceNamespace": a.Namespace,
			"Schedule": a.Schedule, "ResourceId": a.ResourceID, "ScalableDimension": a.Dimension,
			"CreationTime": newEpoch(a.Created),
		}
		if a.Timezone != "" {
			m["Timezone"] = a.Timezone
		}
		if a.StartTime != nil {
			m["StartTime"] = newEpoch(*a.StartTime)
		}
		if a.EndTime != nil {
			m["EndTime"] = newEpoch(*a.EndTime)
		}
		if a.MinCapacity != nil || a.MaxCapacity != nil {
			m["ScalableTargetAction"] = scalableTargetAction{MinCapacity: a.MinCapacity, MaxCapacity: a.MaxCapacity}
		}
		out = append(out, m)
	}
	// "If this parameter is used, the operation returns up to MaxResults results at a time, along with a
	// NextToken value."
	resp := map[string]any{"ScheduledActions": out}
	if from+limit < len(list) {
		resp["NextToken"] = pageToken("scheduled", list[from+limit-1].Arn)
	}
	return resp, nil
}

func (e *Emulator) deleteScheduledAction(dec decoder) (any, *apiError) {
	var in struct {
		targetInput
		ScheduledActionName string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if _, _, err := checkTarget(in.targetInput); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	key := scheduledKey(in.ServiceNamespace, in.ResourceId, in.ScalableDimension, in.ScheduledActionName)
	if _, ok := e.st.ScheduledActions[key]; !ok {
		// DeleteScheduledAction's errors include ObjectNotFoundException: "The specified object could not be
		// found."
		return nil, aasNotFound("No scheduled action found for service namespace: %s, resource ID: %s, scalable dimension: %s, scheduled action name: %s",
			in.ServiceNamespace, in.ResourceId, in.ScalableDimension, in.ScheduledActionName)
	}
	delete(e.st.ScheduledActions, key)
	e.saveLocked()
	return map[string]any{}, nil
}

// scheduleTick is how often the scheduler reads the clock: "the delay between the time the scheduled action is
// triggered and the time the target service honors the scaling action might be a few seconds" (How scheduled
// scaling for Application Auto Scaling works), so a second's resolution is within AWS's own.
const scheduleTick = time.Second

// scheduleLoop runs the scheduled actions whose time has come, once per scheduleTick.
func (e *Emulator) scheduleLoop() {
	t := time.NewTicker(scheduleTick)
	defer t.Stop()
	for {
		select {
		case <-e.done:
			return
		case <-t.C:
			e.runScheduled(e.now())
		}
	}
}

// runScheduled runs every action whose next instant is at or before now. "The order of execution for scheduled
// actions is guaranteed for the same scalable target, but not for scheduled actions across scalable targets."
// Here the due actions of one target run in the order of their instants (then of their names).
func (e *Emulator) runScheduled(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var due []*scheduledActionRec
	for _, a := range e.st.ScheduledActions {
		if !a.Next.IsZero() && !a.Next.After(now) {
			due = append(due, a)
		}
	}
	if len(due) == 0 {
		return
	}
	sort.Slice(due, func(i, j int) bool {
		ti, tj := targetKey(due[i].Namespace, due[i].ResourceID, due[i].Dimension), targetKey(due[j].Namespace, due[j].ResourceID, due[j].Dimension)
		if ti != tj {
			return ti < tj
		}
		if !due[i].Next.Equal(due[j].Next) {
			return due[i].Next.Before(due[j].Next)
		}
		return due[i].Name < due[j].Name
	})
	for _, a := range due {
		e.runScheduledLocked(a, now)
		// The next instant after now: instants missed while the emulator was stopped run once, not once each.
		a.Next = a.nextAfter(maxTime(a.Next, now))
	}
	e.saveLocked()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// runScheduledLocked runs one scheduled action, at its instant: "A scheduled action sets the MinCapacity and
// MaxCapacity to what is specified by the scheduled action at the date and time specified." and "If current
// capacity is less than the specified minimum capacity, Application Auto Scaling scales out (increases
// capacity) to the specified minimum capacity. If current capacity is greater than the specified maximum
// capacity, Application Auto Scaling scales in (decreases capacity) to the specified maximum capacity." (How
// scheduled scaling for Application Auto Scaling works). It records the activities AWS's describe-scaling-
// activities example shows for scheduled actions: "Setting min capacity to 15 and max capacity to 20", cause
// "scheduled action name my-first-scheduled-action was triggered", then, when the capacity changes, "Setting
// write capacity units to 15." with cause "minimum capacity was set to 15" (for a variant: "Setting desired
// instance count to 15."). e.mu must be held.
func (e *Emulator) runScheduledLocked(a *scheduledActionRec, now time.Time) {
	t := e.st.Targets[targetKey(a.Namespace, a.ResourceID, a.Dimension)]
	if t == nil {
		return
	}
	// "You can temporarily turn off scheduled scaling for a scalable target. This helps you prevent scheduled
	// actions from being active without having to delete them." An instant passed while suspended is not run
	// later.
	if s := t.Suspended.ScheduledScalingSuspended; s != nil && *s {
		e.log.Printf("scheduled action %s of %s not run: scheduled scaling is suspended", a.Name, a.ResourceID)
		return
	}
	var parts []string
	minC, maxC := t.Min, t.Max
	if a.MinCapacity != nil {
		minC = *a.MinCapacity
		parts = append(parts, fmt.Sprintf("min capacity to %d", minC))
	}
	if a.MaxCapacity != nil {
		maxC = *a.MaxCapacity
		parts = append(parts, fmt.Sprintf("max capacity to %d", maxC))
	}
	if len(parts) == 0 {
		// No ScalableTargetAction: nothing to set.
		return
	}
	what := strings.Join(parts, " and ")
	act := e.recordActivityLocked(t, "Setting "+what, fmt.Sprintf("scheduled action name %s was triggered", a.Name))
	act.Start = now.UTC()
	if minC > maxC {
		// "In some cases, however, you must include both sizes to ensure that the new minimum capacity is not
		// greater than the maximum capacity, or the new maximum capacity is not less than the minimum capacity."
		act.StatusCode, act.End = activityFailed, now.UTC()
		act.Message = fmt.Sprintf("Failed to set %s. Reason: the minimum capacity %d would be greater than the maximum capacity %d.", what, minC, maxC)
		return
	}
	t.Min, t.Max = minC, maxC
	act.StatusCode, act.Message = activitySuccessful, "Successfully set "+what
	endpoint, variant, _ := checkTarget(targetInput{ServiceNamespace: t.Namespace, ResourceId: t.ResourceID, ScalableDimension: t.Dimension})
	ep := e.st.Endpoints[endpoint]
	if ep != nil && ep.Variant == variant && ep.Desired >= t.Min && ep.Desired <= t.Max {
		return
	}
	want, cause := t.Min, fmt.Sprintf("minimum capacity was set to %d", t.Min)
	if ep != nil && ep.Desired > t.Max {
		want, cause = t.Max, fmt.Sprintf("maximum capacity was set to %d", t.Max)
	}
	// "To complete a scheduled action successfully, the specified resource must be in a scalable state in the
	// target service. If it isn't, the request fails and returns an error message, for example, Resource Id
	// [ActualResourceId] is not scalable. Reason: ..."
	if ep == nil || ep.Variant != variant || ep.Status != statusInService {
		reason := fmt.Sprintf("the endpoint %s does not exist", endpoint)
		if ep != nil && ep.Variant == variant {
			reason = fmt.Sprintf("the status of the endpoint must be InService, not %s", ep.Status)
		}
		f := e.recordActivityLocked(t, fmt.Sprintf("Setting desired instance count to %d.", want), cause)
		f.StatusCode, f.End = activityFailed, time.Now().UTC()
		f.Message = fmt.Sprintf("Resource Id [%s] is not scalable. Reason: %s", t.ResourceID, reason)
		return
	}
	e.log.Printf("scheduled action %s: %s: %d -> %d", a.Name, t.ResourceID, ep.Desired, want)
	e.applyCapacityLocked(t, ep, want, cause, "")
}
