package measure

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/capacity/plantest"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/simulate"
)

// compareFixture is a comparison of two types of kokoro-82m on the diurnal shape, into a temporary directory.
func compareFixture(t *testing.T, peak, trough float64) (*Compare, *bytes.Buffer) {
	t.Helper()
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("kokoro-82m")
	if err != nil {
		t.Fatal(err)
	}
	sp := simulate.DefaultShapeParams(simulate.ShapeDiurnal)
	sp.PeakRPS, sp.TroughRPS, sp.At = peak, trough, sp.Duration/3
	tr, err := simulate.Generate(sp)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	return &Compare{Model: m, Types: []string{"ml.g5.xlarge", "ml.g6.xlarge"}, Trace: tr, PeakRPS: peak, TroughRPS: trough, Local: true,
		Parallel: 1, Artifacts: t.TempDir(), Stderr: &stderr,
		Price: map[string]TypePrice{"ml.g5.xlarge": {USD: 1.41, Source: "test"}, "ml.g6.xlarge": {USD: 1.17, Source: "test"}},
		QMax: func(context.Context, models.Model, string, io.Writer) error {
			return errors.New("qmax runs on an endpoint")
		},
		TTotal: func(context.Context, models.Model, string, string, io.Writer) error {
			return errors.New("ttotal runs on an endpoint")
		},
	}, &stderr
}

// A measurement endpoint's name is the model's and the type's; a type's artifact set is the catalog's
// directory of the type, or the type's name inside another artifacts directory.
func TestCompareEndpointAndTypeDir(t *testing.T) {
	if got, want := CompareEndpoint("kokoro-82m", "ml.g5.xlarge"), "speech-kokoro-82m-ml-g5-xlarge"; got != want {
		t.Errorf("CompareEndpoint = %q, want %q", got, want)
	}
	c := &Compare{Model: models.Model{ID: "kokoro-82m"}, Artifacts: capacity.ArtifactDir("kokoro-82m")}
	if got, want := c.TypeDir("ml.g5.xlarge"), capacity.TypeArtifactDir("kokoro-82m", "ml.g5.xlarge"); got != want {
		t.Errorf("TypeDir = %q, want %q", got, want)
	}
	c.Artifacts = "elsewhere"
	if got, want := c.TypeDir("ml.g5.xlarge"), filepath.Join("elsewhere", "ml.g5.xlarge"); got != want {
		t.Errorf("TypeDir = %q, want %q", got, want)
	}
}

// The winner is the cheapest type per day among those that hold; a report without any CPU figure says why.
func TestCompareDecide(t *testing.T) {
	cpu := 40.0
	rep := &capacity.TypeComparison{Local: true, Rows: []capacity.TypeRow{
		{InstanceType: "a", Holds: true, CostPerDayUSD: 30},
		{InstanceType: "b", Holds: true, CostPerDayUSD: 20},
		{InstanceType: "c", Holds: false, CostPerDayUSD: 10},
	}}
	decide(rep)
	if rep.Winner != "b" {
		t.Errorf("winner %q, want b (the cheapest that holds)", rep.Winner)
	}
	if len(rep.Notes) != 2 || !strings.Contains(rep.Notes[0], "local emulator") || !strings.Contains(rep.Notes[1], "no CPU or memory figure") {
		t.Errorf("notes %q: want the emulator's and the missing CPU figure's", rep.Notes)
	}
	rep = &capacity.TypeComparison{Rows: []capacity.TypeRow{{InstanceType: "a", CPUPercent: &cpu}, {InstanceType: "b"}}}
	decide(rep)
	if rep.Winner != "" || len(rep.Notes) != 0 {
		t.Errorf("no type holds: winner %q, notes %q; want none", rep.Winner, rep.Notes)
	}
}

// A type's artifact set plans and simulates into its row, and the plan is written beside the artifacts.
func TestComparePlanAndSimulate(t *testing.T) {
	c, _ := compareFixture(t, 20, 2)
	dir := c.TypeDir("ml.g6.xlarge")
	plantest.WriteTypeSet(t, filepath.Join("..", "testdata", "plans", "valid"), dir, "ml.g6.xlarge")
	row := capacity.TypeRow{InstanceType: "ml.g6.xlarge", ArtifactDir: dir, PricePerHourUSD: 1.17}
	qmaxPath, ttotalPath := filepath.Join(dir, capacity.QMaxFile), filepath.Join(dir, capacity.TTotalFile)
	if err := c.planAndSimulate(context.Background(), c.Model, &row, qmaxPath, ttotalPath); err != nil {
		t.Fatal(err)
	}
	p, err := capacity.LoadPlan(filepath.Join(dir, capacity.PlanFile))
	if err != nil {
		t.Fatalf("the plan beside the artifacts: %v", err)
	}
	if p.Fingerprint.InstanceType != "ml.g6.xlarge" || row.SafeRPS != p.Derived.SafeRPS || row.MaxInstances != p.Derived.MaxInstances {
		t.Errorf("row %+v does not carry the plan's figures (type %s, safe rate %v)", row, p.Fingerprint.InstanceType, p.Derived.SafeRPS)
	}
	if row.InstanceHours <= 0 || row.Requests <= 0 || row.CostPerDayUSD <= 0 || row.CostPer1000USD <= 0 {
		t.Errorf("row %+v: want the simulation's instance-hours, requests and costs", row)
	}
	if row.Holds != (row.Feasible && row.ViolationMinutes == 0) || (!row.Holds && row.Finding == "") {
		t.Errorf("holds %v, feasible %v, %d violation minutes, finding %q: inconsistent", row.Holds, row.Feasible, row.ViolationMinutes, row.Finding)
	}

	// Records that do not fold to the artifact's figures are refused, and no plan is written.
	bad := c.TypeDir("ml.g5.xlarge")
	plantest.WriteTypeSet(t, filepath.Join("..", "testdata", "plans", "valid"), bad, "ml.g5.xlarge")
	q, err := capacity.LoadQMax(filepath.Join(bad, capacity.QMaxFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, q.RecordsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	row = capacity.TypeRow{InstanceType: "ml.g5.xlarge", ArtifactDir: bad}
	if err := c.planAndSimulate(context.Background(), c.Model, &row, filepath.Join(bad, capacity.QMaxFile), filepath.Join(bad, capacity.TTotalFile)); err == nil {
		t.Error("records that do not fold to the artifact: no error")
	}
	if _, err := os.Stat(filepath.Join(bad, capacity.PlanFile)); err == nil {
		t.Error("a refused artifact set got a plan")
	}
}

// Interrupted before it starts, a comparison measures no type, deploys nothing and writes no report.
func TestCompareRunInterrupted(t *testing.T) {
	c, _ := compareFixture(t, 20, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, out, err := c.Run(ctx, aws.Config{})
	if err == nil || rep != nil || out != "" {
		t.Fatalf("Run = %v, %q, %v: want an error and no report", rep, out, err)
	}
	if !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "no report written") {
		t.Errorf("error %q: want it to say the comparison was interrupted and wrote no report", err)
	}
	if _, err := os.Stat(filepath.Join(c.Artifacts, capacity.CompareFile)); err == nil {
		t.Error("an interrupted comparison wrote a report")
	}
}

// A dry run on the emulator names each type's endpoint, price and bound, and how long it all takes.
func TestCompareDryRunLocal(t *testing.T) {
	c, _ := compareFixture(t, 20, 2)
	var out bytes.Buffer
	if err := c.DryRun(context.Background(), aws.Config{}, &out, 10*time.Minute, 5*time.Minute, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"DRY RUN", CompareEndpoint("kokoro-82m", "ml.g5.xlarge"), CompareEndpoint("kokoro-82m", "ml.g6.xlarge"),
		"none on the emulator", "1.17 USD an instance-hour (test)", "per type at most 20m0s", "at most 40m0s in all",
		filepath.Join(c.Artifacts, CompareChartFile)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, out.String())
		}
	}
}

// A sub-command's lines are prefixed with the type, however its writes split them.
func TestPrefixWriter(t *testing.T) {
	var b bytes.Buffer
	w := &prefixWriter{w: &b, prefix: "  [t] "}
	for _, s := range []string{"one\ntw", "o\n", "three\n"} {
		if n, err := io.WriteString(w, s); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got, want := b.String(), "  [t] one\n  [t] two\n  [t] three\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
