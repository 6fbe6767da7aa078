package emulator

import "testing"

// TestServiceModelCoversEveryOperation: every operation the emulator serves has its input shape in the
// generated service-model table (servicemodel_gen.go); an operation added without regenerating the table
// (`go generate ./emulator`, after adding it to internal/servicemodelgen's list) fails here.
func TestServiceModelCoversEveryOperation(t *testing.T) {
	for prefix, s := range targetServices {
		m := serviceModels[prefix]
		if m == nil {
			t.Errorf("service %s has no service model", prefix)
			continue
		}
		for op := range s.ops {
			if in, ok := m.Inputs[op]; !ok || in == "" || m.Shapes[in] == nil {
				t.Errorf("%s.%s has no input shape in the service model table (%s)", prefix, op, serviceModelSource)
			}
		}
	}
	rt := serviceModels["SageMakerRuntime"]
	for _, op := range []string{"InvokeEndpoint", "InvokeEndpointWithResponseStream"} {
		if rt == nil || rt.Shapes[rt.Inputs[op]] == nil {
			t.Errorf("SageMakerRuntime.%s has no input shape", op)
		}
	}
	if len(serviceModelSkippedPatterns) > 2 {
		t.Errorf("%d model patterns are not checked (Go's regexp cannot read them): %v", len(serviceModelSkippedPatterns), serviceModelSkippedPatterns)
	}
}

// TestEveryOperationHasABucket: "Every control-plane operation has its own token bucket" (README): an
// operation added to a service's table without a DefaultRates entry would go unthrottled.
func TestEveryOperationHasABucket(t *testing.T) {
	for _, s := range targetServices {
		for op := range s.ops {
			if _, ok := DefaultRates[op]; !ok {
				t.Errorf("%s.%s has no bucket in DefaultRates", s.name, op)
			}
		}
	}
}
