package models

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

func TestDefaultCatalogHoldsBothModels(t *testing.T) {
	// GIVEN the embedded catalog WHEN it is loaded THEN both models validate with the pinned values.
	cat, err := Default()
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	k, err := cat.Get("kokoro-82m")
	if err != nil {
		t.Fatal(err)
	}
	if k.Source.Revision != "1939ad2a8e416c0acfeecc08a694d14ef25f2231" || k.Source.Repo != "onnx-community/Kokoro-82M-v1.0-ONNX" {
		t.Errorf("kokoro source = %+v", k.Source)
	}
	if k.InstanceType != "ml.g5.xlarge" || k.SLO.TTFABMs != 3000 || k.QueueMaxDepth != 50 ||
		k.Scaling.MinInstances != 1 || k.Scaling.MaxInstances != 9 || !k.Scaling.Autoscaling ||
		k.Planning.SurgeRatio != 1.25 || k.Planning.DetectionBufferS != 60 || k.Engine != "kokoro" || k.SLO.StallBudget() != 0 {
		t.Errorf("kokoro entry = %+v", k)
	}
	if k.EndpointName() != "speech-kokoro-82m" || k.WeightsPrefix() != "models/kokoro-82m/1939ad2a8e416c0acfeecc08a694d14ef25f2231/" {
		t.Errorf("names: %s %s", k.EndpointName(), k.WeightsPrefix())
	}
	e, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	if e.Engine != "espeak" || e.Source != nil || e.InstanceType != "ml.c5.large" || e.Revision() != "none" {
		t.Errorf("espeak entry = %+v", e)
	}
	if _, err := cat.Get("nope"); err == nil || !strings.Contains(err.Error(), "espeak-ng, kokoro-82m") {
		t.Errorf("unknown model error = %v", err)
	}
}

const good = `{"id":"m1","engine":"espeak","instance_type":"ml.c5.large",
"prices":{"ml.c5.large":{"usd_per_hour":0.119,"source":"a test figure","date":"2026-11-30"}},"initial_instance_count":1,
"slo":{"ttfab_ms":1000,"percentile":95,"stall_budget_ms":0},"queue_max_depth":4,
"scaling":{"autoscaling":true,"min_instances":1,"max_instances":3},
"planning":{"surge_ratio":1.25,"detection_buffer_s":60},
"container":{"startup_health_check_timeout_s":300,"model_download_timeout_s":300,"invocation_timeout_s":60}}`

func TestCatalogValidation(t *testing.T) {
	cases := []struct {
		name  string
		file  string
		edit  func(string) string
		wants []string // every substring must appear in the error
	}{
		{"valid", "m1.json", func(s string) string { return s }, nil},
		{"unknown top-level and nested fields reported together", "m1.json", func(s string) string {
			return strings.Replace(strings.Replace(s, `"engine"`, `"engin":1,"engine"`, 1), `"percentile"`, `"pct":3,"percentile"`, 1)
		}, []string{"m1.json: engin: unknown field", "m1.json: slo.pct: unknown field"}},
		{"short revision", "m1.json", func(s string) string {
			return strings.Replace(s, `"engine":"espeak"`, `"engine":"kokoro","source":{"repo":"a/b","revision":"main","files":["x.onnx"]}`, 1)
		}, []string{"m1.json: source.revision: \"main\" is not a pinned commit"}},
		{"min above max", "m1.json", func(s string) string { return strings.Replace(s, `"min_instances":1`, `"min_instances":5`, 1) },
			[]string{"scaling.min_instances: is 5, above scaling.max_instances 3"}},
		{"non-positive SLO", "m1.json", func(s string) string { return strings.Replace(s, `"ttfab_ms":1000`, `"ttfab_ms":0`, 1) },
			[]string{"slo.ttfab_ms: is 0"}},
		{"stall budget missing is refused, not read as 0", "m1.json", func(s string) string { return strings.Replace(s, `,"stall_budget_ms":0`, "", 1) },
			[]string{"m1.json: slo.stall_budget_ms: missing required field"}},
		{"negative stall budget", "m1.json", func(s string) string { return strings.Replace(s, `"stall_budget_ms":0`, `"stall_budget_ms":-5`, 1) },
			[]string{"slo.stall_budget_ms: is -5: the p95 playback stall budget must be 0 to"}},
		{"unknown engine", "m1.json", func(s string) string { return strings.Replace(s, `"espeak"`, `"piper"`, 1) },
			[]string{`engine: unknown engine "piper": use one of kokoro, espeak, calibration`}},
		{"kokoro without source", "m1.json", func(s string) string { return strings.Replace(s, `"espeak"`, `"kokoro"`, 1) },
			[]string{"source: is missing"}},
		{"id does not match file", "other.json", func(s string) string { return s }, []string{`id: "m1" does not match the file name`}},
		{"wrong type", "m1.json", func(s string) string { return strings.Replace(s, `"queue_max_depth":4`, `"queue_max_depth":"4"`, 1) },
			[]string{"queue_max_depth: has JSON type string, want int"}},
		{"surge out of range", "m1.json", func(s string) string { return strings.Replace(s, `"surge_ratio":1.25`, `"surge_ratio":10.5`, 1) },
			[]string{"planning.surge_ratio: is 10.5: use a ratio in [1, 10]"}},
		{"several problems at once", "m1.json", func(s string) string {
			return strings.Replace(strings.Replace(s, `"ttfab_ms":1000`, `"ttfab_ms":-1`, 1), `"instance_type":"ml.c5.large"`, `"instance_type":"big"`, 1)
		}, []string{"slo.ttfab_ms", "instance_type: \"big\""}},
		{"missing section", "m1.json", func(s string) string {
			return strings.Replace(s, `"slo":{"ttfab_ms":1000,"percentile":95,"stall_budget_ms":0},`, "", 1)
		}, []string{"m1.json: slo: missing required field"}},
		{"not JSON", "m1.json", func(string) string { return "{" }, []string{"m1.json: not valid JSON"}},
		{"queue_max_depth twice", "m1.json", func(s string) string {
			return strings.Replace(s, `"queue_max_depth":4`, `"queue_max_depth":4,"queue_max_depth":400`, 1)
		}, []string{`m1.json: queue_max_depth: duplicate key: "queue_max_depth" appears more than once`}},
		{"case-variant key beside the real one", "m1.json", func(s string) string {
			return strings.Replace(s, `"queue_max_depth":4`, `"queue_max_depth":4,"QUEUE_MAX_DEPTH":400`, 1)
		}, []string{`m1.json: QUEUE_MAX_DEPTH: duplicate key: "QUEUE_MAX_DEPTH" differs from "queue_max_depth" only in case`}},
		{"case-variant key alone", "m1.json", func(s string) string {
			return strings.Replace(s, `"queue_max_depth":4`, `"QUEUE_MAX_DEPTH":4`, 1)
		}, []string{"m1.json: QUEUE_MAX_DEPTH: unknown field", "m1.json: queue_max_depth: missing required field"}},
		{"nested duplicate", "m1.json", func(s string) string {
			return strings.Replace(s, `"max_instances":3`, `"max_instances":3,"Max_Instances":300`, 1)
		}, []string{`m1.json: scaling.Max_Instances: duplicate key`}},
		{"null section", "m1.json", func(s string) string {
			return strings.Replace(s, `"slo":{"ttfab_ms":1000,"percentile":95,"stall_budget_ms":0}`, `"slo":null`, 1)
		}, []string{"m1.json: slo: is null"}},
		{"queue depth above its bound", "m1.json", func(s string) string {
			return strings.Replace(s, `"queue_max_depth":4`, `"queue_max_depth":1000000`, 1)
		},
			[]string{"queue_max_depth: is 1000000: the shield depth must be 1 to 100000"}},
		{"detection buffer above its bound", "m1.json", func(s string) string {
			return strings.Replace(s, `"detection_buffer_s":60`, `"detection_buffer_s":1e300`, 1)
		}, []string{"planning.detection_buffer_s: is 1e+300: use 0 to 3600 seconds"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// GIVEN a catalog directory with one edited file WHEN it loads THEN the error names file, field and fix.
			_, err := Load(fstest.MapFS{tc.file: {Data: []byte(tc.edit(good))}})
			if len(tc.wants) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error containing %q, got none", tc.wants)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCatalogRefusesOversizedAndIrregularFiles(t *testing.T) {
	// GIVEN a catalog file above MaxFileBytes and a directory named like a catalog file WHEN the catalog loads
	// THEN both are refused with the file named and the limit stated, instead of being read.
	big := strings.Replace(good, `"id"`, `"description":"`+strings.Repeat("x", MaxFileBytes)+`","id"`, 1)
	_, err := Load(fstest.MapFS{"m1.json": {Data: []byte(big)}, "dir.json": {Mode: fs.ModeDir}})
	if err == nil {
		t.Fatal("oversized catalog file loaded")
	}
	for _, w := range []string{"m1.json: cannot read: m1.json is larger than the 1 MiB limit", "dir.json: cannot read: dir.json is a directory, not a regular file"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

func TestEmptyCatalog(t *testing.T) {
	if _, err := Load(fstest.MapFS{}); err == nil {
		t.Fatal("empty catalog loaded")
	}
}

func TestContainerEnvironment(t *testing.T) {
	cat, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	k, _ := cat.Get("kokoro-82m")
	e, _ := cat.Get("espeak-ng")
	// GIVEN a model with weights WHEN its environment is built THEN it names engine, id, model dir and depth.
	if got := k.ContainerEnvironment("/opt/ml/model", 0); len(got) != 6 || got["SAGEMAKER_MODEL_SERVER_TIMEOUT"] != "60" || got["ENGINE"] != "kokoro" || got["MODEL_DIR"] != "/opt/ml/model" ||
		got["QUEUE_MAX_DEPTH"] != "0" || got["MODEL_ID"] != "kokoro-82m" || got["FIRST_AUDIO_TARGET_MS"] != "1000" {
		t.Errorf("kokoro environment = %v", got)
	}
	// GIVEN a weightless model THEN there is no model dir, and a shield depth is passed through.
	if got := e.ContainerEnvironment("/ignored", 16); len(got) != 5 || got["ENGINE"] != "espeak" || got["QUEUE_MAX_DEPTH"] != "16" ||
		got["FIRST_AUDIO_TARGET_MS"] != "333" {
		t.Errorf("espeak environment = %v", got)
	}
}

// TestFirstAudioTarget: a third of the SLO, rounded down, never 0 (the container's target must be positive
// for a deadline to lead the SLO).
func TestFirstAudioTarget(t *testing.T) {
	for _, c := range []struct{ slo, want int }{{3000, 1000}, {1000, 333}, {2, 1}, {1, 1}, {MaxSLOMs, MaxSLOMs / 3}} {
		if got := (SLO{TTFABMs: c.slo}).FirstAudioTargetMs(); got != c.want {
			t.Errorf("SLO %d ms: target %d ms, want %d", c.slo, got, c.want)
		}
	}
}
