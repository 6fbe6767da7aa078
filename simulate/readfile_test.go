package simulate

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadFile reads a CSV trace from its file, names the file in its errors, and refuses a file above
// MaxTraceBytes; Lowest is the trace's lowest rate.
func TestReadFileAndLowest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "day.csv")
	if err := os.WriteFile(path, []byte("timestamp,rps\n0,10\n60,2.5\n120,7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Peak() != 10 || tr.Lowest() != 2.5 {
		t.Errorf("peak %v, lowest %v: want 10 and 2.5", tr.Peak(), tr.Lowest())
	}
	if !math.IsInf((Trace{}).Lowest(), 1) {
		t.Error("a trace without points: want +Inf as its lowest rate")
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.csv")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	big := filepath.Join(dir, "big.csv")
	if err := os.WriteFile(big, []byte(strings.Repeat("#\n", MaxTraceBytes/2+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(big); err == nil || !strings.Contains(err.Error(), "larger than the limit") {
		t.Errorf("a file above MaxTraceBytes: %v, want the limit named", err)
	}
}
