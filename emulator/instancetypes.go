package emulator

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Instance-type profiles. Every instance of the emulator is a container process on this host, whatever the
// type its endpoint config names; an instance-type profile makes the types differ where a comparison of types
// (tts-bench compare --local) needs them to: how long an instance takes to launch, and how long the calibration
// twin computes a segment. Every factor is an ASSUMPTION, not a measurement: the emulator's README
// ("Instance-type profiles") lists them with their reasoning.

// InstanceTypeProfile is what the emulator assumes of one instance type, relative to ml.g5.xlarge (the type of
// the original proof of value, docs/design.md "The original", whose figures the built-in timing profile and
// the Kokoro twin come from).
type InstanceTypeProfile struct {
	// InstanceType is the type's name, e.g. ml.g4dn.xlarge.
	InstanceType string
	// Hardware describes the type in a few words: accelerator, vCPUs, memory.
	Hardware string
	// LaunchFactor multiplies the timing profile's launch phases (PhaseLaunch: provisioning, image pull, model
	// download) for an instance of the type; the health and traffic phases are the platform's and stay as
	// the profile gives them.
	LaunchFactor float64
	// LaunchBasis says where LaunchFactor comes from.
	LaunchBasis string
	// ServiceFactor multiplies the calibration twin's compute per segment (the model's CALIBRATION_SEGMENT_MS)
	// in the instance's container process: the twin's service time relative to ml.g5.xlarge. A real engine
	// (espeak) computes on this host's cores whatever the type: the factor does not apply to it.
	ServiceFactor float64
	// Basis says where ServiceFactor comes from.
	Basis string
}

// ReferenceInstanceType is the type every factor is relative to, and the profile an enum type without one of
// its own runs as.
const ReferenceInstanceType = "ml.g5.xlarge"

// The rough reasoning the factors share, quoted in their Basis strings.
const (
	gpuBasisPrefix = "ASSUMPTION, not measured: Kokoro-82M on the GPU is taken to lie between memory-bound (the ratio of memory bandwidths) and compute-bound (the ratio of FP32 peaks), the factor their midpoint; "
	cpuBasisPrefix = "ASSUMPTION, rough order of magnitude, not measured: no published Kokoro-82M figure for this type; a published CPU benchmark (heyneo.com, AMD EPYC 7763) puts Kokoro's ONNX model at a real-time factor of about 0.5, over a second for a request of a few seconds of audio against the proof of value's 61.3 ms on ml.g5.xlarge; "
	imageBasis     = "every type pulls the same image (container/Dockerfile: CUDA 12 runtime with cuDNN and ONNX Runtime GPU, several GB) and downloads the same model data"
)

// instanceTypeProfiles is the table. Every name but LocalInstanceType is in SageMaker's
// ProductionVariantInstanceType enum (TestInstanceTypeProfilesTable).
var instanceTypeProfiles = map[string]InstanceTypeProfile{
	LocalInstanceType: {
		InstanceType: LocalInstanceType, Hardware: "a container process on this host",
		LaunchFactor: 1, LaunchBasis: "the emulator's own type: the configured timing profile as it is",
		ServiceFactor: 1, Basis: "the emulator's own type: the twin as the catalog gives it",
	},
	"ml.g5.xlarge": {
		InstanceType: "ml.g5.xlarge", Hardware: "1 NVIDIA A10G (24 GB, 600 GB/s, about 31 FP32 TFLOPS), 4 vCPUs, 16 GiB",
		LaunchFactor: 1, LaunchBasis: "the reference: the original proof of value's start-up of Kokoro-82M on this type (the kokoro-g5 profile)",
		ServiceFactor: 1, Basis: "the reference: the original proof of value's 61.3 ms mean uncontended per request on this type (the kokoro-82m-twin catalog entry)",
	},
	"ml.g6.xlarge": {
		InstanceType: "ml.g6.xlarge", Hardware: "1 NVIDIA L4 (24 GB, 300 GB/s, about 30 FP32 TFLOPS), 4 vCPUs, 16 GiB",
		LaunchFactor: 1, LaunchBasis: "ASSUMPTION: the same size as ml.g5.xlarge (4 vCPUs, 16 GiB) and " + imageBasis + "; nothing published says it starts differently",
		ServiceFactor: 1.5, Basis: gpuBasisPrefix + "L4 against A10G: half the memory bandwidth (300 against 600 GB/s: 2.0) and about the same FP32 peak (1.0)",
	},
	"ml.g4dn.xlarge": {
		InstanceType: "ml.g4dn.xlarge", Hardware: "1 NVIDIA T4 (16 GB, 320 GB/s, 8.1 FP32 TFLOPS), 4 vCPUs, 16 GiB",
		LaunchFactor: 1, LaunchBasis: "ASSUMPTION: the same size as ml.g5.xlarge (4 vCPUs, 16 GiB) and " + imageBasis + "; nothing published says it starts differently",
		ServiceFactor: 2.9, Basis: gpuBasisPrefix + "T4 against A10G: 320 against 600 GB/s (1.9) and 8.1 against about 31 FP32 TFLOPS (3.9); AWS reports up to four times higher inference throughput on G5 than on G4dn for NLP and CV PyTorch models (AWS Machine Learning Blog, 2022), near the compute-bound end",
	},
	"ml.c5.xlarge": {
		InstanceType: "ml.c5.xlarge", Hardware: "4 vCPUs, 8 GiB, no GPU",
		LaunchFactor: 1.1, LaunchBasis: "ASSUMPTION: " + imageBasis + " over a baseline network bandwidth of 1.25 Gbps (a public copy of EC2's instance data; the GPU types' was not looked up); 10% longer is a guess",
		ServiceFactor: 10, Basis: cpuBasisPrefix + "4 vCPUs taken as ten times ml.g5.xlarge's time",
	},
	"ml.c5.large": {
		InstanceType: "ml.c5.large", Hardware: "2 vCPUs, 4 GiB, no GPU",
		LaunchFactor: 1.3, LaunchBasis: "ASSUMPTION: " + imageBasis + " over the smallest baseline network bandwidth of the table (0.75 Gbps in a public copy of EC2's instance data) and unpacks it on 2 vCPUs; 30% longer is a guess",
		ServiceFactor: 20, Basis: cpuBasisPrefix + "2 vCPUs taken as twice ml.c5.xlarge's time",
	},
	"ml.m5.large": {
		InstanceType: "ml.m5.large", Hardware: "2 vCPUs, 8 GiB, no GPU",
		LaunchFactor: 1.3, LaunchBasis: "ASSUMPTION: as ml.c5.large (2 vCPUs; its baseline network bandwidth assumed the same, not looked up); 30% longer is a guess",
		ServiceFactor: 20, Basis: cpuBasisPrefix + "2 vCPUs taken as twice ml.c5.xlarge's time, as ml.c5.large (the m5's extra memory does not speed a single synthesis)",
	},
}

// InstanceTypeProfileFor returns the profile of instance type t and true, or a zero profile and false when
// the emulator has none for t: such a type (if SageMaker's enum has it) runs as ReferenceInstanceType, every
// factor 1, and the emulator logs once that it has no profile for it. LocalInstanceType has a profile (every
// factor 1).
func InstanceTypeProfileFor(t string) (InstanceTypeProfile, bool) {
	p, ok := instanceTypeProfiles[t]
	return p, ok
}

// ProfiledInstanceTypes lists the SageMaker instance types that have a profile, sorted: the types a local
// comparison tells apart. LocalInstanceType is not among them.
func ProfiledInstanceTypes() []string {
	var types []string
	for _, t := range slices.Sorted(maps.Keys(instanceTypeProfiles)) {
		if t != LocalInstanceType {
			types = append(types, t)
		}
	}
	return types
}

// instanceTypeProfile is the profile an instance of type t runs with: its own, or ReferenceInstanceType's
// for a type without one, logged once per type.
func (e *Emulator) instanceTypeProfile(t string) InstanceTypeProfile {
	if p, ok := InstanceTypeProfileFor(t); ok {
		return p
	}
	if _, seen := e.unprofiled.LoadOrStore(t, true); !seen {
		what := fmt.Sprintf("instance type %q: the emulator has no instance-type profile for it", t)
		if t == "" {
			what = "a variant names no instance type"
		}
		e.log.Printf("%s; it runs as %s (every factor 1); the profiled types are %s", what, ReferenceInstanceType, strings.Join(ProfiledInstanceTypes(), ", "))
	}
	p := instanceTypeProfiles[ReferenceInstanceType]
	p.InstanceType = t
	return p
}

// envCalibrationSegment is the calibration engine's compute per segment, in milliseconds.
const envCalibrationSegment = "CALIBRATION_SEGMENT_MS"

// scaleMillis multiplies a whole number of milliseconds v by factor, rounded to a millisecond; false when v
// is not a whole number of milliseconds (the container refuses it, as it would without a profile) or the
// result is out of range.
func scaleMillis(v string, factor float64) (string, bool) {
	ms, err := strconv.Atoi(v)
	if err != nil || ms < 0 {
		return "", false
	}
	scaled := math.Round(float64(ms) * factor)
	if scaled > math.MaxInt32 {
		return "", false
	}
	return strconv.Itoa(int(scaled)), true
}
