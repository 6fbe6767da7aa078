package emulator

import (
	"os"
	"path/filepath"
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
