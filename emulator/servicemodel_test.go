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
