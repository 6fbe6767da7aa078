package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/models"
)

// thaw checks a journal's instance count before it sends it to the API. A journal edited to a million
// instances is refused as --desired would be (exit 2), before any change.
func TestThawRefusesAJournalOfAMillionInstances(t *testing.T) {
	e, before := frozenEndpoint(t, nil)
	jdir := filepath.Join(t.TempDir(), "journals")
	j := cloud.Journal{SchemaVersion: cloud.JournalSchemaVersion, Endpoint: "speech-espeak-ng", Variant: models.VariantName, RunID: "edited",
		PID: 1, Command: "tts-bench qmax", Created: time.Now().UTC(), DesiredInstanceCount: 1_000_000, TargetExisted: true, MinCapacity: 1, MaxCapacity: 3}
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(jdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jdir, "speech-espeak-ng.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "thaw", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdir, "--container-dir", containerDir)
	if code != 2 || !strings.Contains(stderr, "desired_instance_count is 1000000, want 1 to 100000") {
		t.Fatalf("thaw of a journal of a million instances: exit %d, want 2 naming the bound\n%s%s", code, stdout, stderr)
	}
	if after := readScaling(t, e); !reflect.DeepEqual(after, before) {
		t.Fatalf("the refused thaw changed the endpoint: %+v, was %+v", after, before)
	}
}
