package cloud

import (
	"context"
	"fmt"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
)

// Expectation is what should be deployed for a model: the plan's scaling when the gate accepts it, or the
// measurement configuration with the gate's reasons (docs/design.md, "The gate"). Drift compares the
// deployment with it (DriftOptions); thaw puts the plan's bounds back.
type Expectation struct {
	// PlanPath is the plan the gate was given.
	PlanPath string
	// Spec is the plan's scaling, nil when the gate refused the plan.
	Spec *capacity.ScalingSpec
	// Reasons say why there is no Spec.
	Reasons []string
	// Container is the environment that should run: the plan's shield, or the measurement configuration's 0.
	Container ContainerExpectation
}

// Expect runs the deploy's gate for m on the instance type of where it is deployed (the emulator's "local"
// or the catalog's). The gate re-runs the plan's simulations: ctx stops it, and then the caller stops too.
func Expect(ctx context.Context, m models.Model, planPath, containerDir string, local bool, compression int) Expectation {
	e := Expectation{PlanPath: planPath, Container: ContainerExpectation{FirstAudioTargetMs: m.SLO.FirstAudioTargetMs()}}
	digest, files, err := capacity.SourceDigestFiles(containerDir)
	if err != nil {
		digest = ""
		e.Reasons = append(e.Reasons, fmt.Sprintf("the container source digest is unavailable (%v): no plan can match it; give --container-dir", err))
	}
	it := m.InstanceType
	if local {
		it = models.LocalInstanceType
	}
	dec := capacity.GateContext(ctx, capacity.Deployment{Model: m, InstanceType: it, Emulator: local, CloudWatchCompression: compression, ContainerDigest: digest, ContainerNote: files.UntrackedNote()}, planPath)
	if dec.Enabled {
		s := capacity.ScalingSpecFor(m.EndpointName(), models.VariantName, dec.Plan)
		e.Spec = &s
		e.Container.QueueMaxDepth = dec.QueueMaxDepth()
		return e
	}
	e.Reasons = append(e.Reasons, dec.Reasons...)
	return e
}

// Bounds are the fleet bounds a thaw of m's endpoint puts back: the plan's when the gate accepted it, else the
// catalog's.
func (e Expectation) Bounds(m models.Model) *Bounds {
	if e.Spec != nil {
		return &Bounds{Min: int32(e.Spec.MinInstances), Max: int32(e.Spec.MaxInstances), Source: "the plan " + e.PlanPath}
	}
	return &Bounds{Min: int32(m.Scaling.MinInstances), Max: int32(m.Scaling.MaxInstances), Source: "the catalog (" + m.ID + ")"}
}
