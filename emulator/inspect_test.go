package emulator_test

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// InstanceURLs names the serving instances' own ports: a request sent straight to each URL is answered by
// the instance the emulator lists (the container names itself in every answer), with the same audio the
// emulator relays; an unknown endpoint has none, and a deleted one none once its instances are gone.
func TestInstanceURLs(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.Container(t))
	if got := e.InstanceURLs("no-such-endpoint"); got != nil {
		t.Fatalf("InstanceURLs of an unknown endpoint = %v, want nil", got)
	}
	const name = "inspect"
	emulatortest.Endpoint(t, e, name, emulatortest.Instances(2), emulatortest.InService(),
		emulatortest.Env(map[string]string{"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "1"}))

	urls := e.InstanceURLs(name)
	if len(urls) != 2 || urls[0] == urls[1] {
		t.Fatalf("InstanceURLs = %v, want 2 distinct URLs", urls)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	var ids []string
	var direct []byte
	for _, u := range urls {
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Fatalf("instance URL %q: want http://127.0.0.1:<port>", u)
		}
		resp, err := client.Post(u+"/invocations", "application/json", bytes.NewReader([]byte(`{"text":"Hello there."}`)))
		if err != nil {
			t.Fatalf("POST %s/invocations: %v", u, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(body) <= 44 || !bytes.HasPrefix(body, []byte("RIFF")) {
			t.Fatalf("POST %s/invocations: status %d, %d bytes (%v): want 200 and a WAV stream", u, resp.StatusCode, len(body), err)
		}
		id, ok := strings.CutPrefix(resp.Header.Get("X-Amzn-SageMaker-Custom-Attributes"), "instance-id=")
		if !ok || id == "" {
			t.Fatalf("POST %s/invocations: no instance-id in X-Amzn-SageMaker-Custom-Attributes (%q)", u, resp.Header.Get("X-Amzn-SageMaker-Custom-Attributes"))
		}
		ids = append(ids, id)
		if direct == nil {
			direct = body
		}
	}
	want := e.InstanceIDs(name)
	slices.Sort(ids)
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("the instances answering at InstanceURLs are %v, the emulator serves %v", ids, want)
	}
	// The same request through the emulator gets the same audio (the calibration engine is deterministic).
	relayed, err := invokeText(ctxFor(t, 10*time.Second), e.Clients, name, "Hello there.")
	if err != nil {
		t.Fatalf("InvokeEndpoint: %v", err)
	}
	if !bytes.Equal(direct, relayed) {
		t.Fatalf("direct answer %d bytes, through the emulator %d bytes: want the same audio", len(direct), len(relayed))
	}

	if _, err := e.SageMaker.DeleteEndpoint(ctxFor(t, 10*time.Second), &sagemaker.DeleteEndpointInput{EndpointName: aws.String(name)}); err != nil {
		t.Fatalf("DeleteEndpoint: %v", err)
	}
	eventually(t, hangBound, "the deleted endpoint to list no instance URL", func() bool { return e.InstanceURLs(name) == nil })
}
