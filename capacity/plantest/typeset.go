package plantest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
)

// WriteTypeSet copies the measured artifact set in src (qmax.json, its raw records and ttotal.json, such as
// testdata/plans/valid) into dir as if it had been measured on instanceType, as tts-bench compare keeps one
// set per type in artifacts/<model>/<type>/: the instance type of both artifacts is rewritten and the ttotal
// artifact's qmax digest re-sealed. The records are copied unchanged (they do not record the type). It
// writes no plan.
func WriteTypeSet(t testing.TB, src, dir, instanceType string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	q, err := capacity.LoadQMax(filepath.Join(src, capacity.QMaxFile))
	if err != nil {
		t.Fatal(err)
	}
	if q.RecordsFile != "" {
		data, err := os.ReadFile(filepath.Join(src, q.RecordsFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, q.RecordsFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q.InstanceType = instanceType
	qPath := filepath.Join(dir, capacity.QMaxFile)
	if err := capacity.WriteJSON(qPath, q); err != nil {
		t.Fatal(err)
	}
	tt, err := capacity.LoadTTotal(filepath.Join(src, capacity.TTotalFile))
	if err != nil {
		t.Fatal(err)
	}
	tt.InstanceType = instanceType
	if tt.QMaxSHA256, err = capacity.FileDigest(qPath); err != nil {
		t.Fatal(err)
	}
	if err := capacity.WriteJSON(filepath.Join(dir, capacity.TTotalFile), tt); err != nil {
		t.Fatal(err)
	}
}
