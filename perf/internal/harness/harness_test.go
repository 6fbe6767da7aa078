package harness

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

func TestStartContainerServesAndStops(t *testing.T) {
	bin := emulatortest.ContainerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := StartContainer(ctx, bin, []string{"ENGINE=calibration", "CALIBRATION_SEGMENT_MS=0"}, ContainerOutput{LogPath: filepath.Join(t.TempDir(), "c.log")})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(c.URL + "/ping")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("ping: %v %v", err, resp)
	}
	resp.Body.Close()
	rss, peak, err := ProcMemory(c.proc.Pid())
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
	_, err := StartContainer(context.Background(), bin, []string{"SCHEDULER=nonsense"}, ContainerOutput{LogPath: filepath.Join(t.TempDir(), "c.log")})
	if err == nil {
		t.Fatal("a container with SCHEDULER=nonsense started")
	}
	if want := "SCHEDULER"; !contains(err.Error(), want) {
		t.Fatalf("error %q does not show the log naming %s", err, want)
	}
}

// With RequestLogs the container's request log lines are collected, and still written to its log file.
func TestStartContainerCollectsRequestLogs(t *testing.T) {
	bin := emulatortest.ContainerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logPath := filepath.Join(t.TempDir(), "c.log")
	c, err := StartContainer(ctx, bin, []string{"ENGINE=calibration", "CALIBRATION_SEGMENT_MS=0"}, ContainerOutput{LogPath: logPath, RequestLogs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+"/invocations", strings.NewReader(`{"text":"Hello there."}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("invocation: status %d", resp.StatusCode)
	}
	if n := c.WaitLogs(1); n != 1 {
		t.Fatalf("%d request logs collected, want 1", n)
	}
	if l := c.Logs(0)[0]; l.Msg != "request" || l.Status != http.StatusOK {
		t.Errorf("request log %+v", l)
	}
	c.Stop()
	if b, err := os.ReadFile(logPath); err != nil || !strings.Contains(string(b), `"msg":"request"`) {
		t.Errorf("the log file lacks the request line (%v):\n%s", err, b)
	}
}

func TestStartProcessReportsAnExit(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = StartProcess(context.Background(), exec.Command("sh", "-c", "exit 3"), "http://127.0.0.1:"+strconv.Itoa(port)+"/ping", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "exited before") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("StartProcess = %v: want the exit named", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("StartProcess waited %v for a process that had exited", time.Since(start))
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
