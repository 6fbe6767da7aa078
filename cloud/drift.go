package cloud

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/capacity"
)

// Severity ranks a drift finding.
type Severity string

// The severities: an error disturbs a measurement or leaves the endpoint unlike its plan (drift exits 1); a
// warning deserves a look; info is context.
const (
	SeverityError Severity = "error"
	SeverityWarn  Severity = "warn"
	SeverityInfo  Severity = "info"
)

// Finding codes: one per kind of drift.
const (
	FindingEndpointMissing    = "endpoint_missing"
	FindingEndpointNotReady   = "endpoint_not_in_service"
	FindingJournalPresent     = "journal_present"
	FindingJournalUnreadable  = "journal_unreadable"
	FindingScalingSuspended   = "scaling_suspended"
	FindingTargetMissing      = "target_missing"
	FindingTargetOrphaned     = "target_orphaned"
	FindingPolicyOrphaned     = "policy_orphaned"
	FindingPolicyMismatch     = "policy_mismatch"
	FindingCapacityMismatch   = "capacity_mismatch"
	FindingAlarmMissing       = "alarm_missing"
	FindingAlarmOrphaned      = "alarm_orphaned"
	FindingAlarmFiring        = "alarm_in_alarm"
	FindingAlarmNoData        = "alarm_insufficient_data"
	FindingNoPlan             = "no_plan"
	FindingAlarmMismatch      = "alarm_mismatch"
	FindingCountOutsideBounds = "count_outside_bounds"
	FindingMeasurementMarker  = "measurement_marker"
)

// Finding is one difference between what is deployed and what should be.
type Finding struct {
	// Severity ranks it.
	Severity Severity `json:"severity"`
	// Code names the kind (Finding* constants).
	Code string `json:"code"`
	// Subject is the resource it is about (endpoint, target, policy or alarm name, journal path).
	Subject string `json:"subject"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Remediation says what to do about it ("" for info that needs nothing).
	Remediation string `json:"remediation"`
}

// DriftReport is what Drift found.
type DriftReport struct {
	// Endpoint and Variant name what was checked.
	Endpoint string `json:"endpoint"`
	Variant  string `json:"variant"`
	// Expected says what should be deployed: "the plan <path>" or "the measurement configuration (no scaling)".
	Expected string `json:"expected"`
	// Findings are ordered by severity (errors first), then as found.
	Findings []Finding `json:"findings"`
}

// Errors counts the error-level findings.
func (r DriftReport) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			n++
		}
	}
	return n
}

// Clean reports whether there is no error-level finding.
func (r DriftReport) Clean() bool { return r.Errors() == 0 }

// DriftEndpointAPI is the part of the SageMaker client Drift uses: the endpoint, and its endpoint config and
// model for the container environment.
type DriftEndpointAPI interface {
	ContainerEnvAPI
}

// DriftClients are the read-only clients Drift and Validate work through.
type DriftClients struct {
	// SageMaker describes the endpoint.
	SageMaker DriftEndpointAPI
	// AutoScaling reads the target and its policies.
	AutoScaling ScalingReadAPI
	// CloudWatch reads the alarms.
	CloudWatch AlarmReadAPI
}

// DriftOptions say what should be deployed.
type DriftOptions struct {
	// Model is the catalog id, for remediations.
	Model string
	// Endpoint and Variant name the variant to check.
	Endpoint, Variant string
	// JournalDir holds the freeze journals (DefaultJournalDir in the commands).
	JournalDir string
	// Spec is the plan's scaling when the gate accepts the plan; nil means the endpoint should run the
	// measurement configuration: no target, no policies, no alarms.
	Spec *capacity.ScalingSpec
	// PlanSource names the plan Spec comes from (its path).
	PlanSource string
	// NoPlanReasons say why there is no Spec (the gate's reasons), reported as info.
	NoPlanReasons []string
	// CatalogInstances is the catalog's instance count, expected without a plan.
	CatalogInstances int32
	// Container is what the container environment should hold (the plan's queue shield, or 0 for the
	// measurement configuration; the SLO's first-audio target; the scheduler); nil skips the comparison.
	// With it, scaling deployed over a container without a queue shield is an error of its own.
	Container *ContainerExpectation
	// TempDirs are where a killed run may have left hidden temporary files (LeftoverTempFiles): the
	// model's artifacts directory; the journal directory is always looked in.
	TempDirs []string
	// TempFix is the command that removes the temporary files found in TempDirs (thaw with the plan that
	// names that directory); "" names plain deletion. Files in the journal directory name thaw --endpoint.
	TempFix string
}

// Drift compares what is deployed on a variant (the endpoint and its state, the scalable target and its
// SuspendedState, the policies, the alarms and their states, and any journal of an interrupted run) with
// what should be (opts.Spec, or the measurement configuration without one). It only reads. Errors are for
// what the caller could not read; everything found is a Finding.
func Drift(ctx context.Context, cl DriftClients, o DriftOptions) (DriftReport, error) {
	rep := DriftReport{Endpoint: o.Endpoint, Variant: o.Variant, Expected: "the measurement configuration (no scaling)"}
	if o.Spec != nil {
		rep.Expected = "the plan " + o.PlanSource
	}
	add := func(sev Severity, code, subject, detail, fix string) {
		rep.Findings = append(rep.Findings, Finding{Severity: sev, Code: code, Subject: subject, Detail: detail, Remediation: fix})
	}
	deploy := "speech-infra deploy " + o.Model
	thaw := "tts-bench thaw --endpoint " + o.Endpoint

	// Journals first: they need no AWS call.
	path, err := JournalPath(o.JournalDir, o.Endpoint)
	if err != nil {
		return rep, err
	}
	if _, err := os.Lstat(path); err == nil {
		j, err := ReadJournal(path)
		if err != nil {
			add(SeverityError, FindingJournalUnreadable, path, err.Error(), "restore the endpoint with tts-bench thaw (it restores from the journal, or without one from the plan or the catalog), then delete the file")
		} else {
			add(SeverityError, FindingJournalPresent, path,
				fmt.Sprintf("run %s (pid %d, %q) froze the variant at %s and did not put it back: before it, %s",
					orNone(j.RunID), j.PID, j.Command, j.Created.Format("2006-01-02T15:04:05Z"), journalState(j)),
				thaw+" (restores exactly the journaled state)")
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return rep, fmt.Errorf("look for the journal %s: %w", path, err)
	}
	tmps, err := LeftoverTempFiles(append([]string{o.JournalDir}, o.TempDirs...)...)
	if err != nil {
		return rep, err
	}
	jdir, _ := filepath.Abs(o.JournalDir)
	if real, err := filepath.EvalSymlinks(jdir); err == nil {
		jdir = real
	}
	for _, f := range tmps {
		// thaw --endpoint looks only in the journal directory; a file beside an --output elsewhere needs the
		// plan that names that directory: the fix named must remove the file.
		fix := thaw + " (removes it), or delete it"
		if filepath.Dir(f.Path) != jdir {
			fix = "delete it (rm " + f.Path + ")"
			if o.TempFix != "" {
				fix = o.TempFix + " (removes it), or delete it (rm " + f.Path + ")"
			}
		}
		add(SeverityWarn, FindingTempFileLeft, f.Path,
			fmt.Sprintf("a hidden temporary file (%s, last written %s) that a killed qmax, replay or journal write left: it holds no result and no process has it open",
				sizeText(f.Size), f.ModTime.UTC().Format("2006-01-02T15:04:05Z")),
			fix)
	}

	d, err := cl.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(o.Endpoint)})
	var desired int32
	haveCount := false
	config := ""
	switch {
	case IsNotFound(err):
		add(SeverityError, FindingEndpointMissing, o.Endpoint, "the endpoint does not exist", deploy)
	case err != nil:
		return rep, fmt.Errorf("describe endpoint %s: %w", o.Endpoint, err)
	default:
		if d.EndpointStatus != smtypes.EndpointStatusInService {
			detail := fmt.Sprintf("the endpoint is %s", d.EndpointStatus)
			if r := aws.ToString(d.FailureReason); r != "" {
				detail += ": " + r
			}
			fix := "wait until it is InService and check again"
			if d.EndpointStatus == smtypes.EndpointStatusFailed {
				fix = "fix the cause, then " + deploy
			}
			add(SeverityError, FindingEndpointNotReady, o.Endpoint, detail, fix)
		}
		// The measurement marker: a run holds the endpoint (or one ended without removing its marker). Read
		// when the client can (the SDK's can; a double without tags and ARN is skipped).
		if api, ok := cl.SageMaker.(MarkerAPI); ok && aws.ToString(d.EndpointArn) != "" {
			f, err := ReadMarker(ctx, api, aws.ToString(d.EndpointArn))
			if err != nil {
				return rep, err
			}
			if f != nil {
				now := time.Now()
				detail, fix := "the endpoint carries the measurement marker of "+f.Describe(now)+": that run is measuring it now",
					"wait for that run to end (its restore removes the marker), or run "+thaw+" where its journal is; if it is gone, "+thaw+" --force"
				if f.Marker == nil || f.Marker.Expired(now) {
					detail = "the endpoint carries the measurement marker of " + f.Describe(now) + ": that run ended without removing it, or overran its bound"
					fix = "make sure it is not running, then " + thaw + " where its journal is, or " + thaw + " --force from any machine (qmax and ttotal --force override an expired marker)"
				}
				add(SeverityError, FindingMeasurementMarker, o.Endpoint, detail, fix)
			}
		}
		config = aws.ToString(d.EndpointConfigName)
		if n, err := variantDesired(d, o.Variant); err != nil {
			add(SeverityError, FindingEndpointMissing, o.Endpoint, err.Error(), deploy)
		} else {
			desired, haveCount = n, true
		}
	}

	target, err := describeTarget(ctx, cl.AutoScaling, o.Endpoint, o.Variant)
	if err != nil {
		return rep, err
	}
	rid := capacity.ResourceID(o.Endpoint, o.Variant)
	var policies []aastypes.ScalingPolicy
	if target != nil {
		if s := suspensionOf(target.SuspendedState); s.Any() {
			add(SeverityError, FindingScalingSuspended, rid, "scaling is suspended: "+s.String()+"; the fleet will not follow load", thaw)
		}
		lo, hi := aws.ToInt32(target.MinCapacity), aws.ToInt32(target.MaxCapacity)
		if haveCount && (desired < lo || desired > hi) {
			add(SeverityError, FindingCountOutsideBounds, o.Endpoint, fmt.Sprintf("%d instances desired, outside the target's bounds %d–%d", desired, lo, hi), thaw)
		}
		out, err := cl.AutoScaling.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{
			ServiceNamespace: aastypes.ServiceNamespace(capacity.ServiceNamespace), ResourceId: aws.String(rid),
			ScalableDimension: aastypes.ScalableDimension(capacity.ScalableDimension),
		})
		if err != nil {
			return rep, fmt.Errorf("describe scaling policies of %s: %w", rid, err)
		}
		policies = out.ScalingPolicies
	}
	if o.Container != nil && haveCount {
		env, model, err := environmentOf(ctx, cl.SageMaker, o.Endpoint, config, o.Variant)
		if err != nil {
			return rep, err
		}
		want := "the measurement configuration"
		fix := deploy + " (without a plan that passes the gate it deploys the measurement configuration)"
		if o.Spec != nil {
			want, fix = "the plan", deploy+" (puts the plan's container environment back)"
		}
		depthShown, _ := envValue(env, EnvQueueMaxDepth)
		for _, c := range ContainerChecks("model "+model, env, *o.Container, target != nil) {
			if c.Pass {
				continue
			}
			if c.Name == "queue shield under scaling" {
				sfix := fix
				if o.Spec == nil {
					sfix = deploy + " (without a plan that passes the gate it removes the scaling), or speech-infra destroy " + o.Model
				}
				add(SeverityError, FindingShieldMissing, c.Subject,
					fmt.Sprintf("a scalable target is registered but the container runs without a queue shield (%s is %s): a surge before the scale-out queues without bound instead of being shed", EnvQueueMaxDepth, depthShown), sfix)
				continue
			}
			v := strings.TrimPrefix(c.Name, "container ")
			// Without a plan only the shield disturbs a measurement (it sheds); another scheduler or
			// first-audio target is measured as it runs, but is not what a deploy will run: a warning.
			sev, why := SeverityError, ""
			if o.Spec == nil && v != EnvQueueMaxDepth {
				sev, why = SeverityWarn, ": a measurement now measures another configuration than the deploy runs"
			}
			add(sev, FindingEnvironmentMismatch, c.Subject, fmt.Sprintf("the container runs %s=%s, %s deploys %s%s", v, c.Deployed, want, c.Planned, why), fix)
		}
	}
	alarms, err := cl.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: capacity.AlarmNames(o.Endpoint), MaxRecords: aws.Int32(100)})
	if err != nil {
		return rep, fmt.Errorf("describe alarms of %s: %w", o.Endpoint, err)
	}

	if o.Spec == nil {
		for _, r := range o.NoPlanReasons {
			add(SeverityInfo, FindingNoPlan, o.Endpoint, "no plan passes the gate: "+r, "")
		}
		removal := deploy + " (without a plan that passes the gate it removes the scaling), or speech-infra destroy " + o.Model
		if target != nil {
			add(SeverityError, FindingTargetOrphaned, rid,
				fmt.Sprintf("a scalable target (%d–%d) is registered but no plan passes the gate: it can move the instance count under a measurement",
					aws.ToInt32(target.MinCapacity), aws.ToInt32(target.MaxCapacity)), removal)
		}
		for _, p := range policies {
			add(SeverityError, FindingPolicyOrphaned, aws.ToString(p.PolicyName), fmt.Sprintf("a %s policy is attached but no plan passes the gate", p.PolicyType), removal)
		}
		for _, a := range alarms.MetricAlarms {
			add(SeverityWarn, FindingAlarmOrphaned, aws.ToString(a.AlarmName), "an alarm of an earlier plan remains", removal)
		}
		if haveCount && o.CatalogInstances > 0 && desired != o.CatalogInstances {
			add(SeverityWarn, FindingCapacityMismatch, o.Endpoint,
				fmt.Sprintf("%d instances desired, the catalog deploys %d", desired, o.CatalogInstances), fmt.Sprintf("tts-bench thaw --endpoint %s --desired %d", o.Endpoint, o.CatalogInstances))
		}
	} else {
		s := *o.Spec
		if target == nil {
			add(SeverityError, FindingTargetMissing, rid, "no scalable target: the plan's scaling is not deployed", deploy)
		} else {
			diffs, err := ScalingDiff(ctx, cl.AutoScaling, cl.CloudWatch, s)
			if err != nil {
				return rep, err
			}
			for _, d := range diffs {
				code, subject, fix := FindingPolicyMismatch, rid, deploy+" (puts the plan's scaling back)"
				switch {
				case strings.HasPrefix(d, "minimum instances") || strings.HasPrefix(d, "maximum instances"):
					code = FindingCapacityMismatch
					if rep.has(FindingJournalPresent) || rep.has(FindingScalingSuspended) {
						fix = thaw
					}
				case strings.HasPrefix(d, "no alarm "):
					code, subject = FindingAlarmMissing, strings.TrimPrefix(d, "no alarm ")
				case strings.HasPrefix(d, "alarm "):
					code = FindingAlarmMismatch
				}
				add(SeverityError, code, subject, d, fix)
			}
			want := []string{s.ScaleOut.PolicyName, s.ScaleIn.PolicyName}
			for _, p := range policies {
				if !slices.Contains(want, aws.ToString(p.PolicyName)) {
					add(SeverityError, FindingPolicyOrphaned, aws.ToString(p.PolicyName), fmt.Sprintf("a %s policy the plan does not have", p.PolicyType),
						"delete it (aws application-autoscaling delete-scaling-policy), then "+deploy)
				}
			}
		}
	}

	for _, a := range alarms.MetricAlarms {
		name := aws.ToString(a.AlarmName)
		switch a.StateValue {
		case cwtypes.StateValueAlarm:
			if o.Spec != nil && name == o.Spec.Alarms[0].Name {
				add(SeverityInfo, FindingAlarmFiring, name, "the scale-in alarm is in ALARM: concurrency is below C_scale_min (normal for an idle endpoint above its minimum)", "")
				continue
			}
			add(SeverityError, FindingAlarmFiring, name, "in ALARM: "+aws.ToString(a.StateReason), "find the cause (load, latency, a fleet at its maximum) before measuring; a measurement under it is not representative")
		case cwtypes.StateValueInsufficientData:
			add(SeverityWarn, FindingAlarmNoData, name, "INSUFFICIENT_DATA: "+aws.ToString(a.StateReason), "normal for a new or idle endpoint; otherwise check that the endpoint publishes its metrics")
		}
	}
	slices.SortStableFunc(rep.Findings, func(a, b Finding) int { return rank(a.Severity) - rank(b.Severity) })
	if rep.Findings == nil {
		rep.Findings = []Finding{}
	}
	return rep, nil
}

func (r DriftReport) has(code string) bool {
	return slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Code == code })
}

func rank(s Severity) int {
	switch s {
	case SeverityError:
		return 0
	case SeverityWarn:
		return 1
	}
	return 2
}

func orNone(s string) string {
	if s == "" {
		return "(no run id)"
	}
	return s
}

// journalState says what a journal recorded, e.g. "3 instances, target 1–4, suspended nothing".
func journalState(j *Journal) string {
	if !j.TargetExisted {
		return fmt.Sprintf("%d instances, no scalable target", j.DesiredInstanceCount)
	}
	return fmt.Sprintf("%d instances, target %d–%d, suspended %s", j.DesiredInstanceCount, j.MinCapacity, j.MaxCapacity, j.Suspended)
}
