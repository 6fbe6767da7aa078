package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
)

// TestCommittedPlansAreCurrent: every plan this command keeps is what its artifacts give today; a change to the
// instance model or the simulator that moves one fails here until `go run ./capacity/internal/planregen`
// rewrites it.
func TestCommittedPlansAreCurrent(t *testing.T) {
	for _, d := range Dirs {
		dir := filepath.Join("..", "..", "..", d)
		want, err := Rebuild(context.Background(), dir)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		got, err := os.ReadFile(filepath.Join(dir, capacity.PlanFile))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s/%s is stale: run go run ./capacity/internal/planregen from the repository root", d, capacity.PlanFile)
		}
	}
}

// A plan edited after it was derived is caught: the check above can fail.
func TestAnEditedPlanIsStale(t *testing.T) {
	src := filepath.Join("..", "..", "..", Dirs[0])
	dir := t.TempDir()
	for _, name := range []string{capacity.PlanFile, capacity.QMaxFile, capacity.TTotalFile} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := capacity.LoadPlan(filepath.Join(dir, capacity.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	p.Derived.SafeRPS *= 1.1
	if err := capacity.WriteJSON(filepath.Join(dir, capacity.PlanFile), p); err != nil {
		t.Fatal(err)
	}
	want, err := Rebuild(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, capacity.PlanFile))
	if bytes.Equal(got, want) {
		t.Fatal("a plan whose safe_rps was raised by 10% rebuilds to the same bytes: the staleness check cannot fail")
	}
}
