package harness

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

func TestStartContainerServesAndStops(t *testing.T) {
	bin := emulatortest.ContainerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := StartContainer(ctx, bin, []string{"ENGINE=calibration", "CALIBRATION_SEGMENT_MS=0"}, filepath.Join(t.TempDir(), "c.log"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(c.URL + "/ping")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("ping: %v %v", err, resp)
	}
	resp.Body.Close()
	rss, peak, err := ProcMemory(c.cmd.Process.Pid)
	if err != nil || rss <= 0 || peak < rss {
		t.Fatalf("ProcMemory = %d, %d, %v", rss, peak, err)
	}
	c.Stop()
	c.Stop()
	if _, err := http.Get(c.URL + "/ping"); err == nil {
		t.Fatal("the container still answers after Stop")
	}
}

func TestStartContainerReportsABadConfiguration(t *testing.T) {
	bin := emulatortest.ContainerBinary(t)
	_, err := StartContainer(context.Background(), bin, []string{"SCHEDULER=nonsense"}, filepath.Join(t.TempDir(), "c.log"))
	if err == nil {
		t.Fatal("a container with SCHEDULER=nonsense started")
	}
	if want := "SCHEDULER"; !contains(err.Error(), want) {
		t.Fatalf("error %q does not show the log naming %s", err, want)
	}
}

func TestRunMeasuresAndReportsExit(t *testing.T) {
	res, err := Run(context.Background(), "", nil, "sh", "-c", "head -c 50000000 /dev/zero | tail -c 1 >/dev/null; exit 3")
	if !errors.Is(err, ErrExit) || res.ExitCode != 3 {
		t.Fatalf("Run = %+v, %v: want exit 3 wrapped as ErrExit", res, err)
	}
	if res.Wall <= 0 || res.MaxRSSBytes <= 0 {
		t.Fatalf("not measured: %+v", res)
	}
	if _, err := Run(context.Background(), "", nil, filepath.Join(t.TempDir(), "missing")); err == nil || errors.Is(err, ErrExit) {
		t.Fatalf("a missing program: %v", err)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestChartRefusesEmpty(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.svg")
	if err := (Chart{Title: "t", Series: []Series{{Name: "a"}}}).WriteSVG(p); err == nil {
		t.Fatal("an empty chart was written")
	}
	if _, err := os.Stat(p); err == nil {
		t.Fatal("a file was left")
	}
	if err := (Chart{Title: "t", Series: []Series{{Name: "a", Points: []Point{{1, 2}, {2, 3}}}}, Lines: []HLine{{"goal", 2}}}).WriteSVG(p); err != nil {
		t.Fatal(err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
