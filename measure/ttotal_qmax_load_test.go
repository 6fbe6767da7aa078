package measure

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
)

// The qmax artifact ttotal scales from must be the model's, measured on its endpoint over the probe's
// transport; it then gives the default probe and the baseline p95 at it.
func TestTTotalLoadQMax(t *testing.T) {
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	kokoro, err := cat.Get("kokoro-82m")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "testdata", "plans", "valid", capacity.QMaxFile)
	o := &TTotal{QMaxPath: path, Model: kokoro, Transport: capacity.TransportSageMakerStream}
	p95, errs := o.LoadQMax()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if o.QMax == nil || !strings.HasPrefix(o.QMaxSHA256, "sha256:") || o.ProbeConcurrency < 1 || o.ProbePerInstance != o.ProbeConcurrency || o.ProbeBasis == "" || p95 <= 0 {
		t.Errorf("QMax %v, digest %q, probe %d/%d (%q), p95 %v: want them all set", o.QMax != nil, o.QMaxSHA256, o.ProbeConcurrency, o.ProbePerInstance, o.ProbeBasis, p95)
	}

	espeak, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	o = &TTotal{QMaxPath: path, Model: espeak, Transport: capacity.TransportHTTP, ProbeSet: true, ProbeConcurrency: 100000}
	_, errs = o.LoadQMax()
	got := ""
	for _, e := range errs {
		got += e.Error() + "\n"
	}
	for _, want := range []string{"is for model kokoro-82m, not espeak-ng", "not the endpoint speech-espeak-ng", "but ttotal probes over http", "--probe-concurrency 100000: the qmax curve"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
	if o.QMax != nil {
		t.Error("a refused artifact was kept")
	}
	if _, errs := (&TTotal{QMaxPath: filepath.Join(t.TempDir(), "none.json"), Model: kokoro}).LoadQMax(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "measure it with tts-bench qmax --model kokoro-82m") {
		t.Errorf("a missing artifact: %v", errs)
	}
}
