package emulator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadStateMakesOmittedAndNullMapsUsable(t *testing.T) {
	// GIVEN a state file that leaves the alarms out and holds the models as null WHEN it is loaded THEN every
	// map is usable (writable) and what the file held is kept.
	dir := t.TempDir()
	body := `{"models": null, "endpoint_configs": {}, "endpoints": {}, "targets": {}, "policies": {}, "next_instance": 7}`
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Models == nil || s.Alarms == nil || s.EndpointConfigs == nil || s.Endpoints == nil || s.Targets == nil || s.Policies == nil {
		t.Fatalf("a map is nil after loading: %+v", s)
	}
	s.Models["m"] = &modelRec{Name: "m"}
	s.Alarms["a"] = &alarmRec{Name: "a"}
	if s.NextInstance != 7 {
		t.Errorf("next_instance = %d, want 7", s.NextInstance)
	}
}

func TestSaveStateRoundTripsAndLeavesOnlyTheStateFile(t *testing.T) {
	dir := t.TempDir()
	s := newState()
	s.Models["m"] = &modelRec{Name: "m", Arn: "arn:m"}
	s.NextInstance = 3
	for i := 0; i < 3; i++ {
		if err := s.save(dir); err != nil {
			t.Fatal(err)
		}
	}
	got, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := got.Models["m"]; m == nil || m.Arn != "arn:m" || got.NextInstance != 3 {
		t.Fatalf("loaded %+v", got)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "state.json" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("state directory holds %v, want only state.json", names)
	}
}

// TestLoadStateRefusesUnboundedAndDuplicate: state.json symlinked to /dev/zero is refused without being read
// (reading it runs out of memory), and a key that appears twice in one object (a duplicate "desired" could load
// as 0, after which invokes hang) is refused, naming the key.
func TestLoadStateRefusesUnboundedAndDuplicate(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "state.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("state.json -> /dev/zero: %v, want a refusal naming it not a regular file", err)
	}

	dir = t.TempDir()
	body := `{"endpoints": {"e": {"name": "e", "status": "InService", "desired": 2, "desired": 0}}}`
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(dir); err == nil || !strings.Contains(err.Error(), `endpoints.e.desired: duplicate key`) {
		t.Errorf("a duplicate desired: %v, want a refusal naming endpoints.e.desired", err)
	}

	// The re-run of the pass: "Desired" beside "desired" loaded as 3 and started 3 instances; an escaped
	// spelling of the same key loaded silently. Both are refused, naming the key.
	for name, dup := range map[string]string{"case": `"Desired": 3`, "escaped": `"desir\u0065d": 3`} {
		dir = t.TempDir()
		body = `{"endpoints": {"e": {"name": "e", "status": "InService", "desired": 1, ` + dup + `}}}`
		if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadState(dir); err == nil || !strings.Contains(err.Error(), "endpoints.e.") || !strings.Contains(err.Error(), "duplicate key") {
			t.Errorf("a %s duplicate of desired: %v, want a refusal naming it", name, err)
		}
	}

	// Keys that differ only in case are distinct members of a map (a container environment may hold both).
	dir = t.TempDir()
	body = `{"models": {"m": {"name": "m", "arn": "a", "container": {"Environment": {"Path": "1", "PATH": "2"}}}}}`
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := loadState(dir); err != nil || len(s.Models["m"].Container.Environment) != 2 {
		t.Errorf("case-variant environment keys: %v", err)
	}
}

// TestLoadStateScheduledActions: the scheduled actions come back from state.json (a missing or null map is
// usable), and a record the emulator could not run is refused, naming it: null, keyed under another target or
// name, an unreadable schedule or time zone.
func TestLoadStateScheduledActions(t *testing.T) {
	const key = "sagemaker|endpoint/e/variant/v|sagemaker:variant:DesiredInstanceCount|morning"
	record := func(schedule, tz string) string {
		return `{"name": "morning", "arn": "arn", "namespace": "sagemaker", "resource_id": "endpoint/e/variant/v",
			"dimension": "sagemaker:variant:DesiredInstanceCount", "schedule": "` + schedule + `", "timezone": "` + tz + `",
			"min_capacity": 2, "created": "2026-12-02T00:00:00Z", "anchor": "2026-12-02T00:00:00Z", "next": "2026-12-03T08:00:00Z"}`
	}
	load := func(body string) (*state, error) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return loadState(dir)
	}
	for _, body := range []string{`{}`, `{"scheduled_actions": null}`} {
		s, err := load(body)
		if err != nil || s.ScheduledActions == nil {
			t.Errorf("%s: %v, %v; want an empty, usable map", body, s, err)
		}
	}
	s, err := load(`{"scheduled_actions": {"` + key + `": ` + record("cron(0 8 * * ? *)", "Pacific/Tahiti") + `}}`)
	if err != nil {
		t.Fatal(err)
	}
	if a := s.ScheduledActions[key]; a == nil || a.Schedule != "cron(0 8 * * ? *)" || a.Timezone != "Pacific/Tahiti" ||
		a.MinCapacity == nil || *a.MinCapacity != 2 || a.MaxCapacity != nil || !a.Next.Equal(utc("2026-12-03T08:00:00Z")) {
		t.Errorf("loaded %+v", a)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"null", `{"scheduled_actions": {"` + key + `": null}}`, "is null"},
		{"other key", `{"scheduled_actions": {"` + strings.Replace(key, "morning", "evening", 1) + `": ` + record("rate(1 day)", "") + `}}`, "is keyed"},
		{"schedule", `{"scheduled_actions": {"` + key + `": ` + record("every day", "") + `}}`, ".schedule"},
		{"time zone", `{"scheduled_actions": {"` + key + `": ` + record("rate(1 day)", "Mars/Olympus_Mons") + `}}`, ".timezone"},
	} {
		if _, err := load(tc.body); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}
