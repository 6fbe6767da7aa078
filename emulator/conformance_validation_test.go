package emulator_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/internal/emulatortest"
)

// awsJSONCall posts body to the emulator as the awsJson1_1 operation target (e.g. "SageMaker.DescribeEndpoint")
// and returns the HTTP status, the error type and the message.
func awsJSONCall(t *testing.T, r *emulatortest.Emulator, target, service, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/", strings.NewReader(body))
	req.Header.Set("X-Amz-Target", target)
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("Authorization", sigV4Header(r.Key.AccessKeyID, service))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var shape struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	json.NewDecoder(resp.Body).Decode(&shape)
	return resp.StatusCode, shape.Type, shape.Message
}

// TestDuplicateRequestKeyRefused (issue 27, minor): a control-plane request that names a member twice was
// accepted, the last value silently winning. It is refused before anything changes, naming the key.
func TestDuplicateRequestKeyRefused(t *testing.T) {
	r := emulatortest.Start(t)
	emulatortest.Endpoint(t, r, "speech-dup")
	status, code, msg := awsJSONCall(t, r, "SageMaker.UpdateEndpointWeightsAndCapacities", "sagemaker",
		`{"EndpointName":"speech-dup","DesiredWeightsAndCapacities":[{"VariantName":"AllTraffic","DesiredInstanceCount":1,"DesiredInstanceCount":1000}]}`)
	if status != 400 || code != "SerializationException" || !strings.Contains(msg, "DesiredWeightsAndCapacities[0].DesiredInstanceCount") {
		t.Errorf("duplicate DesiredInstanceCount: %d %s %q, want 400 SerializationException naming the key", status, code, msg)
	}
}
