package emulator

import (
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"
)

var sagemakerName = regexp.MustCompile(`^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$`)

func validation(format string, args ...any) *apiError {
	return errorf("ValidationException", http.StatusBadRequest, format, args...)
}

// resourceKind is a kind of SageMaker resource: its ARN prefix, how messages name it and its name's request
// field, so the checks every kind makes read the same.
type resourceKind struct{ arnPrefix, noun, field string }

var (
	kindModel    = resourceKind{"model/", "model", "modelName"}
	kindConfig   = resourceKind{"endpoint-config/", "endpoint configuration", "endpointConfigName"}
	kindEndpoint = resourceKind{"endpoint/", "endpoint", "endpointName"}
)

// arn is the ARN of the named resource (SageMaker lower-cases names in ARNs).
func (k resourceKind) arn(name string) string {
	return arn("sagemaker", k.arnPrefix+strings.ToLower(name))
}

func (k resourceKind) notFound(name string) *apiError {
	return validation("Could not find %s \"%s\".", k.noun, k.arn(name))
}

func (k resourceKind) alreadyExists(name string) *apiError {
	return validation("Cannot create already existing %s \"%s\".", k.noun, k.arn(name))
}

// checkName validates a new resource's name as SageMaker does.
func (k resourceKind) checkName(name string) *apiError {
	if !sagemakerName.MatchString(name) {
		return validation("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}", name, k.field)
	}
	return nil
}

// locked is an operation whose input is a nameInput and that runs with e.mu held.
func locked(fn func(e *Emulator, in nameInput) (any, *apiError)) operation {
	return func(e *Emulator, dec decoder) (any, *apiError) {
		var in nameInput
		if err := dec(&in); err != nil {
			return nil, err
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		return fn(e, in)
	}
}

// deleteLocked removes the named resource of kind k from records, or says it does not exist; e.mu must be held.
func deleteLocked[T any](e *Emulator, records map[string]*T, k resourceKind, name string) *apiError {
	if _, ok := records[name]; !ok {
		return k.notFound(name)
	}
	delete(records, name)
	e.saveLocked()
	return nil
}

// sagemakerOps are the SageMaker operations (awsJson1_1, X-Amz-Target SageMaker.<op>).
var sagemakerOps = map[string]operation{
	"CreateModel":                        (*Emulator).createModel,
	"DescribeModel":                      locked((*Emulator).describeModelLocked),
	"DeleteModel":                        locked((*Emulator).deleteModelLocked),
	"CreateEndpointConfig":               (*Emulator).createEndpointConfig,
	"DescribeEndpointConfig":             locked((*Emulator).describeEndpointConfigLocked),
	"DeleteEndpointConfig":               locked((*Emulator).deleteEndpointConfigLocked),
	"CreateEndpoint":                     (*Emulator).createEndpoint,
	"DescribeEndpoint":                   locked((*Emulator).describeEndpointLocked),
	"DeleteEndpoint":                     locked((*Emulator).deleteEndpointLocked),
	"ListEndpoints":                      (*Emulator).listEndpoints,
	"UpdateEndpoint":                     (*Emulator).updateEndpoint,
	"UpdateEndpointWeightsAndCapacities": (*Emulator).updateWeightsAndCapacities,
	"AddTags":                            (*Emulator).addTags,
	"ListTags":                           (*Emulator).listTags,
	"DeleteTags":                         (*Emulator).deleteTags,
}

func (e *Emulator) createModel(dec decoder) (any, *apiError) {
	var in struct {
		ModelName        string
		PrimaryContainer *containerDef
		Containers       []containerDef
		ExecutionRoleArn string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if err := kindModel.checkName(in.ModelName); err != nil {
		return nil, err
	}
	c := in.PrimaryContainer
	if c == nil && len(in.Containers) > 0 {
		c = &in.Containers[0]
	}
	if c == nil {
		return nil, validation("Either PrimaryContainer or Containers must be specified.")
	}
	if v, ok := c.Environment[envInvocationTimeout]; ok {
		if _, err := parseInvocationTimeout(v); err != nil {
			return nil, validation("PrimaryContainer.Environment.%s: %v", envInvocationTimeout, err)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.st.Models[in.ModelName]; ok {
		return nil, kindModel.alreadyExists(in.ModelName)
	}
	m := &modelRec{Name: in.ModelName, Arn: kindModel.arn(in.ModelName), Container: *c, ExecutionRoleArn: in.ExecutionRoleArn, Created: time.Now().UTC()}
	e.st.Models[in.ModelName] = m
	e.saveLocked()
	return map[string]any{"ModelArn": m.Arn}, nil
}

type nameInput struct {
	ModelName          string
	EndpointConfigName string
	EndpointName       string
}

func (e *Emulator) describeModelLocked(in nameInput) (any, *apiError) {
	m, ok := e.st.Models[in.ModelName]
	if !ok {
		return nil, kindModel.notFound(in.ModelName)
	}
	return map[string]any{
		"ModelName":        m.Name,
		"ModelArn":         m.Arn,
		"PrimaryContainer": m.Container,
		"ExecutionRoleArn": m.ExecutionRoleArn,
		"CreationTime":     newEpoch(m.Created),
	}, nil
}

func (e *Emulator) deleteModelLocked(in nameInput) (any, *apiError) {
	if err := deleteLocked(e, e.st.Models, kindModel, in.ModelName); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

func (e *Emulator) createEndpointConfig(dec decoder) (any, *apiError) {
	var in struct {
		EndpointConfigName string
		ProductionVariants []variantRec
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if err := kindConfig.checkName(in.EndpointConfigName); err != nil {
		return nil, err
	}
	if len(in.ProductionVariants) != 1 {
		return nil, validation("the emulator supports exactly one production variant, got %d", len(in.ProductionVariants))
	}
	v := in.ProductionVariants[0]
	if v.VariantName == "" || v.ModelName == "" {
		return nil, validation("ProductionVariants[0] needs VariantName and ModelName.")
	}
	if v.InitialInstanceCount < 1 {
		return nil, validation("1 validation error detected: Value '%d' at 'productionVariants.1.member.initialInstanceCount' failed to satisfy constraint: Member must have value greater than or equal to 1", v.InitialInstanceCount)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.st.Models[v.ModelName]; !ok {
		return nil, kindModel.notFound(v.ModelName)
	}
	if _, ok := e.st.EndpointConfigs[in.EndpointConfigName]; ok {
		return nil, kindConfig.alreadyExists(in.EndpointConfigName)
	}
	if v.InitialVariantWeight == 0 {
		in.ProductionVariants[0].InitialVariantWeight = 1
	}
	c := &endpointConfigRec{Name: in.EndpointConfigName, Arn: kindConfig.arn(in.EndpointConfigName), Variants: in.ProductionVariants, Created: time.Now().UTC()}
	e.st.EndpointConfigs[c.Name] = c
	e.saveLocked()
	return map[string]any{"EndpointConfigArn": c.Arn}, nil
}

func (e *Emulator) describeEndpointConfigLocked(in nameInput) (any, *apiError) {
	c, ok := e.st.EndpointConfigs[in.EndpointConfigName]
	if !ok {
		return nil, kindConfig.notFound(in.EndpointConfigName)
	}
	return map[string]any{
		"EndpointConfigName": c.Name,
		"EndpointConfigArn":  c.Arn,
		"ProductionVariants": c.Variants,
		"CreationTime":       newEpoch(c.Created),
	}, nil
}

func (e *Emulator) deleteEndpointConfigLocked(in nameInput) (any, *apiError) {
	if err := deleteLocked(e, e.st.EndpointConfigs, kindConfig, in.EndpointConfigName); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

func (e *Emulator) createEndpoint(dec decoder) (any, *apiError) {
	var in nameInput
	if err := dec(&in); err != nil {
		return nil, err
	}
	if err := kindEndpoint.checkName(in.EndpointName); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.st.EndpointConfigs[in.EndpointConfigName]
	if !ok {
		return nil, kindConfig.notFound(in.EndpointConfigName)
	}
	if _, ok := e.st.Endpoints[in.EndpointName]; ok {
		return nil, kindEndpoint.alreadyExists(in.EndpointName)
	}
	v := c.Variants[0]
	m, ok := e.st.Models[v.ModelName]
	if !ok {
		return nil, kindModel.notFound(v.ModelName)
	}
	if err := e.checkQuotaLocked(v.InstanceType, in.EndpointName, 0, v.InitialInstanceCount); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	model := *m
	ep := &endpointRec{
		Name: in.EndpointName, Arn: kindEndpoint.arn(in.EndpointName),
		ConfigName: c.Name, Status: statusCreating, Variant: v.VariantName, ModelName: v.ModelName,
		InstanceType: v.InstanceType, Weight: v.InitialVariantWeight, Desired: v.InitialInstanceCount,
		Model: &model, StartupTimeoutS: v.StartupTimeoutS,
		Created: now, Modified: now,
		VariantStatus: &variantStatus{Status: variantCreating, Start: now},
	}
	e.st.Endpoints[ep.Name] = ep
	e.saveLocked()
	e.fleetLocked(ep.Name).kickNow()
	return map[string]any{"EndpointArn": ep.Arn}, nil
}

func (e *Emulator) describeEndpointLocked(in nameInput) (any, *apiError) {
	ep, ok := e.st.Endpoints[in.EndpointName]
	if !ok {
		return nil, kindEndpoint.notFound(in.EndpointName)
	}
	variant := map[string]any{
		"VariantName":          ep.Variant,
		"CurrentWeight":        ep.Weight,
		"DesiredWeight":        ep.Weight,
		"CurrentInstanceCount": len(ep.Instances),
		"DesiredInstanceCount": ep.Desired,
		"DeployedImages":       []map[string]any{{"SpecifiedImage": e.st.endpointImage(ep)}},
	}
	if vs := variantStatusView(ep.VariantStatus); vs != nil {
		variant["VariantStatus"] = vs
	}
	out := map[string]any{
		"EndpointName":       ep.Name,
		"EndpointArn":        ep.Arn,
		"EndpointConfigName": ep.ConfigName,
		"EndpointStatus":     ep.Status,
		"CreationTime":       newEpoch(ep.Created),
		"LastModifiedTime":   newEpoch(ep.Modified),
		"ProductionVariants": []map[string]any{variant},
	}
	if ep.FailureReason != "" {
		out["FailureReason"] = ep.FailureReason
	}
	if pd := ep.Pending; pd != nil {
		v, m := e.pendingLocked(pd)
		image := ""
		if m != nil {
			image = m.Container.Image
		}
		pending := map[string]any{
			"VariantName":          v.VariantName,
			"DesiredInstanceCount": pd.Desired,
			"InstanceType":         v.InstanceType,
			"DeployedImages":       []map[string]any{{"SpecifiedImage": image}},
		}
		if vs := variantStatusView(pd.VariantStatus); vs != nil {
			pending["VariantStatus"] = vs
		}
		out["PendingDeploymentSummary"] = map[string]any{
			"EndpointConfigName": pd.ConfigName,
			"StartTime":          newEpoch(pd.Started),
			"ProductionVariants": []map[string]any{pending},
		}
	}
	return out, nil
}

// variantStatusView is the ProductionVariantStatus list DescribeEndpoint shows for a variant stage: one entry
// with Status and StartTime, or nil when no stage is in progress (the field is then left out). StatusMessage
// is shown only while instances terminate ("Terminating N instance(s).", as SageMaker's deployment events
// word it); the platform phases of a timing profile are not AWS's to show.
func variantStatusView(vs *variantStatus) []map[string]any {
	if vs == nil {
		return nil
	}
	v := map[string]any{"Status": vs.Status, "StartTime": newEpoch(vs.Start)}
	if vs.Message != "" {
		v["StatusMessage"] = vs.Message
	}
	return []map[string]any{v}
}

// setVariantStatusLocked moves the endpoint's variant to the stage (Creating, Updating, ActivatingTraffic),
// with StartTime now unless it is in that stage already, or clears it when status is ""; e.mu must be held.
func (e *Emulator) setVariantStatusLocked(ep *endpointRec, status string) {
	switch {
	case status == "":
		ep.VariantStatus = nil
	case ep.VariantStatus == nil || ep.VariantStatus.Status != status:
		ep.VariantStatus = &variantStatus{Status: status, Start: time.Now().UTC()}
		e.log.Printf("endpoint %s: variant %s is %s", ep.Name, ep.Variant, status)
	}
}

// updateEndpoint serves UpdateEndpoint: the endpoint moves to Updating and the fleet performs a blue/green
// swap to the new endpoint config (new instances start and pass /ping, traffic moves to them, the old ones
// drain and stop); on failure it rolls back to the old config, InService, with FailureReason set.
func (e *Emulator) updateEndpoint(dec decoder) (any, *apiError) {
	var in struct {
		EndpointName                     string
		EndpointConfigName               string
		RetainAllVariantProperties       bool
		RetainDeploymentConfig           bool
		ExcludeRetainedVariantProperties []any
		DeploymentConfig                 any
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ep, ok := e.st.Endpoints[in.EndpointName]
	if !ok {
		return nil, kindEndpoint.notFound(in.EndpointName)
	}
	c, ok := e.st.EndpointConfigs[in.EndpointConfigName]
	if !ok {
		return nil, kindConfig.notFound(in.EndpointConfigName)
	}
	if ep.Status != statusInService {
		return nil, validation("Cannot update in-progress endpoint \"%s\".", ep.Arn)
	}
	v := c.Variants[0]
	if v.VariantName != ep.Variant {
		return nil, validation("the emulator updates an endpoint only to a config with the same variant (%s), not %s", ep.Variant, v.VariantName)
	}
	m, ok := e.st.Models[v.ModelName]
	if !ok {
		return nil, kindModel.notFound(v.ModelName)
	}
	desired := v.InitialInstanceCount
	if in.RetainAllVariantProperties {
		desired = max(ep.Desired, 1)
	}
	// Blue/green: the new fleet starts beside the old one, so both count against the quota.
	if err := e.checkQuotaLocked(v.InstanceType, ep.Name, sameType(ep.InstanceType, v.InstanceType, ep.Desired), desired); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	model, variant := *m, v
	ep.Pending = &pendingDeployment{ConfigName: c.Name, Desired: desired, Started: now, Variant: &variant, Model: &model,
		VariantStatus: &variantStatus{Status: variantCreating, Start: now}}
	ep.Status, ep.FailureReason, ep.Modified = statusUpdating, "", now
	e.setVariantStatusLocked(ep, variantUpdating)
	e.saveLocked()
	e.fleetLocked(ep.Name).kickNow()
	return map[string]any{"EndpointArn": ep.Arn}, nil
}

// endpointImage is the image the endpoint's instances run: from the captured model, else the named one.
func (s *state) endpointImage(ep *endpointRec) string {
	if ep.Model != nil {
		return ep.Model.Container.Image
	}
	if m, ok := s.Models[ep.ModelName]; ok {
		return m.Container.Image
	}
	return ""
}

// sameType is n when the two instance types are the same, else 0.
func sameType(a, b string, n int) int {
	if a == b {
		return n
	}
	return 0
}

// usageLocked is how many instances of the instance type every endpoint but skip wants, counting the new
// fleet of a blue/green update in progress beside the old one; e.mu must be held.
func (e *Emulator) usageLocked(instanceType, skip string) int {
	n := 0
	for name, ep := range e.st.Endpoints {
		if name == skip || ep.Status == statusFailed {
			continue
		}
		if ep.InstanceType == instanceType {
			n += ep.Desired
		}
		if pd := ep.Pending; pd != nil {
			if v, _ := e.pendingLocked(pd); v.InstanceType == instanceType {
				n += pd.Desired
			}
		}
	}
	return n
}

// checkQuotaLocked answers ResourceLimitExceeded, as SageMaker does, when giving endpoint `want` instances of
// the instance type (besides `keep` it already runs of that type) would take all endpoints together over the
// per-instance-type quota; e.mu must be held.
func (e *Emulator) checkQuotaLocked(instanceType, endpoint string, keep, want int) *apiError {
	quota := e.instanceQuota()
	used := e.usageLocked(instanceType, endpoint) + keep
	if want <= quota-used {
		return nil
	}
	return errorf("ResourceLimitExceeded", http.StatusBadRequest,
		"The account-level service limit '%s for endpoint usage' is %d Instances, with current utilization of %d Instances and a request delta of %d Instances. "+
			"Ask for fewer instances, or start the emulator with a larger InstanceQuota.", instanceType, quota, used, want)
}

// deleteEndpointLocked serves DeleteEndpoint. An endpoint that is Creating or Updating is refused, as SageMaker
// refuses it (its EndpointStatus documentation: "Failed: ... DeleteEndpoint is the only operation that can be
// performed on a failed endpoint", and an in-progress CreateEndpoint or update must end first); wait until it is
// InService or Failed. AWS publishes no text for this answer: the wording is the emulator's, after
// UpdateEndpoint's "Cannot update in-progress endpoint"; the code is AWS's ValidationException.
func (e *Emulator) deleteEndpointLocked(in nameInput) (any, *apiError) {
	if ep, ok := e.st.Endpoints[in.EndpointName]; ok && (ep.Status == statusCreating || ep.Status == statusUpdating) {
		return nil, validation("Cannot delete in-progress endpoint \"%s\": it is %s; wait until it is InService or Failed.", ep.Arn, ep.Status)
	}
	// The endpoint disappears at once; its fleet notices and stops the instances in the background.
	if err := deleteLocked(e, e.st.Endpoints, kindEndpoint, in.EndpointName); err != nil {
		return nil, err
	}
	if f, ok := e.fleets[in.EndpointName]; ok {
		f.kickNow()
	}
	return map[string]any{}, nil
}

func (e *Emulator) listEndpoints(dec decoder) (any, *apiError) {
	var in struct {
		NameContains string
		StatusEquals string
		SortBy       string
		SortOrder    string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	eps := make([]*endpointRec, 0, len(e.st.Endpoints))
	for _, ep := range e.st.Endpoints {
		if in.NameContains != "" && !strings.Contains(ep.Name, in.NameContains) {
			continue
		}
		if in.StatusEquals != "" && ep.Status != in.StatusEquals {
			continue
		}
		eps = append(eps, ep)
	}
	sort.Slice(eps, func(i, j int) bool {
		var less bool
		switch in.SortBy {
		case "Name":
			less = eps[i].Name < eps[j].Name
		case "Status":
			less = eps[i].Status < eps[j].Status
		default:
			less = eps[i].Created.Before(eps[j].Created)
		}
		if in.SortOrder != "Ascending" {
			return !less
		}
		return less
	})
	list := make([]map[string]any, 0, len(eps))
	for _, ep := range eps {
		list = append(list, map[string]any{
			"EndpointName":     ep.Name,
			"EndpointArn":      ep.Arn,
			"CreationTime":     newEpoch(ep.Created),
			"LastModifiedTime": newEpoch(ep.Modified),
			"EndpointStatus":   ep.Status,
		})
	}
	return map[string]any{"Endpoints": list}, nil
}

func (e *Emulator) updateWeightsAndCapacities(dec decoder) (any, *apiError) {
	var in struct {
		EndpointName                string
		DesiredWeightsAndCapacities []struct {
			VariantName          string
			DesiredWeight        *float64
			DesiredInstanceCount *int
		}
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ep, ok := e.st.Endpoints[in.EndpointName]
	if !ok {
		return nil, kindEndpoint.notFound(in.EndpointName)
	}
	if len(in.DesiredWeightsAndCapacities) == 0 {
		return nil, validation("DesiredWeightsAndCapacities must not be empty.")
	}
	if ep.Status != statusInService {
		return nil, validation("Cannot update in-progress endpoint \"%s\".", ep.Arn)
	}
	desired, weight := ep.Desired, ep.Weight
	for _, d := range in.DesiredWeightsAndCapacities {
		if d.VariantName != ep.Variant {
			return nil, validation("The variant name(s) [%s] is/are not present in the endpoint \"%s\".", d.VariantName, ep.Arn)
		}
		if d.DesiredInstanceCount != nil {
			if *d.DesiredInstanceCount < 0 {
				return nil, validation("1 validation error detected: Value '%d' at 'desiredWeightsAndCapacities.1.member.desiredInstanceCount' failed to satisfy constraint: Member must have value greater than or equal to 0", *d.DesiredInstanceCount)
			}
			desired = *d.DesiredInstanceCount
		}
		if d.DesiredWeight != nil {
			weight = *d.DesiredWeight
		}
	}
	// The count is checked against the quota before anything changes.
	if err := e.setDesiredLocked(ep, desired); err != nil {
		return nil, err
	}
	ep.Weight = weight
	return map[string]any{"EndpointArn": ep.Arn}, nil
}

// setDesiredLocked changes the instance count of an InService endpoint, moving it to Updating until the fleet
// matches; it changes nothing and answers ResourceLimitExceeded when the count is over the instance quota.
// e.mu must be held.
func (e *Emulator) setDesiredLocked(ep *endpointRec, desired int) *apiError {
	if desired < 1 {
		return zeroInstances(ep)
	}
	if desired > ep.Desired {
		if err := e.checkQuotaLocked(ep.InstanceType, ep.Name, 0, desired); err != nil {
			return err
		}
	}
	ep.Modified = time.Now().UTC()
	ep.FailureReason = ""
	if desired != ep.Desired || desired != len(ep.Instances) {
		ep.Desired = desired
		ep.Status = statusUpdating
		e.setVariantStatusLocked(ep, variantUpdating)
	}
	e.saveLocked()
	e.fleetLocked(ep.Name).kickNow()
	return nil
}

// zeroInstances answers a desired instance count of 0. SageMaker allows zero instances only on an endpoint that
// hosts inference components ("An endpoint can scale to and from zero instances only if it hosts inference
// components.", Scale an endpoint to zero instances, SageMaker developer guide); the emulator hosts none. AWS
// publishes no text for this answer: the wording is the emulator's, the code is AWS's ValidationException.
func zeroInstances(ep *endpointRec) *apiError {
	return validation("Endpoint \"%s\" cannot have 0 instances in variant %s: an endpoint can scale to zero instances only if it hosts inference components, and this one hosts none. Ask for at least 1 instance.", ep.Arn, ep.Variant)
}
