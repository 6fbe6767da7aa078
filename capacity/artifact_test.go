package capacity

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ParsePlan strictly decodes a plan held in memory, as LoadPlan does a file; source names it in errors. Only
// tests parse plans from memory (the commands load them from files), so it lives here.
func ParsePlan(source string, data []byte) (*Plan, error) { return parse[Plan](source, data) }

func TestStrictLoadingNamesEveryField(t *testing.T) {
	m := kokoro(t)
	data, err := MarshalArtifact(testQMax(m))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	delete(raw, "q_max")
	raw["Q_MAX"] = 40 // the standard decoder would fill q_max from this, case-insensitively
	raw["colour"] = "blue"
	raw["steps"].([]any)[1].(map[string]any)["ttfab_p96_ms"] = 1
	delete(raw["steps"].([]any)[2].(map[string]any), "meets_slo")
	raw["slo_ttfab_ms"] = "3000"
	edited, _ := json.Marshal(raw)
	_, err = ParseQMax("qmax.json", edited)
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v, want a *LoadError", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"Q_MAX: unknown field", "colour: unknown field", "steps[1].ttfab_p96_ms: unknown field",
		"steps[2].meets_slo: missing required field", "q_max: missing required field",
		"slo_ttfab_ms: has JSON type string, want int", "qmax.json is not a valid qmax artifact",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %q:\n%s", want, msg)
		}
	}
	// Optional fields may be absent.
	delete(raw, "Q_MAX")
	delete(raw, "colour")
	raw["q_max"] = 40
	raw["slo_ttfab_ms"] = 3000
	delete(raw["steps"].([]any)[1].(map[string]any), "ttfab_p96_ms")
	raw["steps"].([]any)[2].(map[string]any)["meets_slo"] = true
	delete(raw["steps"].([]any)[0].(map[string]any), "cloudwatch_ratio")
	ok, _ := json.Marshal(raw)
	if _, err := ParseQMax("qmax.json", ok); err != nil {
		t.Fatalf("valid artifact without optional fields: %v", err)
	}
}

func TestParseRejectsNonObjects(t *testing.T) {
	for _, in := range []string{"", "[]", "null", "42", `{"schema_version":1} {}`, "{"} {
		if _, err := ParsePlan("plan.json", []byte(in)); err == nil {
			t.Errorf("ParsePlan(%q) accepted", in)
		}
	}
}

func TestArtifactsRoundTrip(t *testing.T) {
	m := kokoro(t)
	dir := t.TempDir()
	q, tt := testQMax(m), testTTotal(m)
	qPath, tPath := filepath.Join(dir, "a", QMaxFile), filepath.Join(dir, "a", TTotalFile)
	if err := WriteJSON(qPath, q); err != nil {
		t.Fatal(err)
	}
	digest, err := FileDigest(qPath)
	if err != nil {
		t.Fatal(err)
	}
	tt.QMaxSHA256 = digest
	if err := WriteJSON(tPath, tt); err != nil {
		t.Fatal(err)
	}
	ms, err := LoadMeasurement(qPath, tPath)
	if err != nil {
		t.Fatal(err)
	}
	if ms.QMaxSHA256 != digest || ms.QMaxFile != QMaxFile || !ms.QMax.StartedAt.Equal(q.StartedAt) || len(ms.QMax.Steps) != len(q.Steps) {
		t.Fatalf("round trip lost data: %+v", ms)
	}
	entries, _ := os.ReadDir(filepath.Dir(qPath))
	if len(entries) != 2 {
		t.Fatalf("atomic writes left %d files behind, want 2", len(entries))
	}
}

func TestLoadMeasurementReportsBothArtifacts(t *testing.T) {
	m := kokoro(t)
	dir := t.TempDir()
	q, tt := testQMax(m), testTTotal(m)
	q.QMax = 30
	tt.TTotalS = 250
	qPath, tPath := filepath.Join(dir, QMaxFile), filepath.Join(dir, TTotalFile)
	if err := WriteJSON(qPath, q); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(tPath, tt); err != nil {
		t.Fatal(err)
	}
	_, err := LoadMeasurement(qPath, tPath)
	if err == nil || !strings.Contains(err.Error(), "q_max: is 30 but the staircase gives 40") || !strings.Contains(err.Error(), "durations sum to 300") {
		t.Fatalf("err = %v, want both artifacts' problems", err)
	}
}

func TestQMaxVerify(t *testing.T) {
	m := kokoro(t)
	if errs := testQMax(m).Verify(); len(errs) > 0 {
		t.Fatalf("valid artifact: %v", errs)
	}
	for _, tt := range []struct {
		name   string
		mutate func(*QMax)
		want   string
	}{
		{"schema", func(q *QMax) { q.SchemaVersion = 2 }, "schema_version: is 2"},
		{"bracket", func(q *QMax) { q.BracketLowestFail = 60 }, "bracket_lowest_fail: is 60"},
		{"q_max not the staircase's", func(q *QMax) { q.QMax, q.BracketHighestPass = 30, 30 }, "q_max: is 30"},
		{"pass above a fail", func(q *QMax) { q.Steps[3].MeetsSLO, q.Steps[3].TTFABP95Ms = false, 3100 }, "lowest failing step is at concurrency 30"},
		{"meets_slo contradicts p95", func(q *QMax) { q.Steps[5].MeetsSLO = true }, "steps[5].meets_slo: is true but the p95 TTFAB"},
		{"meets_slo contradicts the stall", func(q *QMax) { q.Steps[2].StallP95Ms = 50.5 }, "steps[2].meets_slo: is true but the p95 stall 50.5 ms exceeds the stall budget 0 ms + jitter 50 ms"},
		{"negative stall", func(q *QMax) { q.Steps[0].StallP95Ms = -1 }, "steps[0].stall_p95_ms: is -1"},
		{"negative stall budget", func(q *QMax) { q.Steps[0].StallBudgetMs = -1 }, "steps[0].stall_budget_ms: is -1"},
		{"stall jitter beyond bounds", func(q *QMax) { q.Steps[0].StallJitterMs = 1e12 }, "steps[0].stall_jitter_ms: is 1e+12"},
		{"percentiles", func(q *QMax) { q.Steps[0].TTFABP50Ms = 9999 }, "percentiles out of order"},
		{"duplicate step", func(q *QMax) { q.Steps[1].Concurrency = 1 }, "appears twice"},
		{"unusable without reason", func(q *QMax) { q.Steps[0].Usable = false }, "unusable_reason: is empty"},
		{"local times", func(q *QMax) { q.StartedAt = q.StartedAt.In(time.FixedZone("CET", 3600)) }, "started_at: "},
		{"time order", func(q *QMax) { q.EndedAt = q.StartedAt.Add(-time.Second) }, "before started_at"},
		{"digest", func(q *QMax) { q.ContainerDigest = "abc" }, "container_digest"},
		{"transport", func(q *QMax) { q.Transport = "grpc" }, "unknown transport"},
		{"records path", func(q *QMax) { q.RecordsFile = "../x" }, "records_file"},
		{"no steps", func(q *QMax) { q.Steps = nil }, "steps: is empty"},
		{"nothing passes", func(q *QMax) {
			for i := range q.Steps {
				q.Steps[i].MeetsSLO = false
			}
			q.QMax, q.BracketHighestPass, q.BracketLowestFail = 0, 0, 1
		}, "no step met the SLO"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := testQMax(m)
			tt.mutate(q)
			if msg := errors.Join(q.Verify()...); msg == nil || !strings.Contains(msg.Error(), tt.want) {
				t.Fatalf("Verify() = %v, want a problem containing %q", msg, tt.want)
			}
		})
	}
}

func TestTTotalVerify(t *testing.T) {
	m := kokoro(t)
	if errs := testTTotal(m).Verify(); len(errs) > 0 {
		t.Fatalf("valid artifact: %v", errs)
	}
	for _, tt := range []struct {
		name   string
		mutate func(*TTotal)
		want   string
	}{
		{"total off by more than 0.05 s", func(x *TTotal) { x.TTotalS = 300.06 }, "durations sum to 300.000"},
		{"total within 0.05 s", nil, ""},
		{"backwards", func(x *TTotal) { x.Timeline[2].At = x.Timeline[0].At.Add(-time.Second) }, "goes backwards"},
		{"duration disagrees with timeline", func(x *TTotal) { x.Durations[0].DurationS = 190; x.Durations[1].DurationS = 110 }, "durations[0].duration_s: is 190"},
		{"dominant", func(x *TTotal) { x.DominantStage = "first_success" }, `longest duration leads to "container_started"`},
		{"wrong pair", func(x *TTotal) { x.Durations[1].From = "x" }, "durations[1]: is x→first_success"},
		{"too few durations", func(x *TTotal) { x.Durations = x.Durations[:1] }, "has 1 entries, want 2"},
		{"instance counts", func(x *TTotal) { x.ToInstances = 1 }, "to_instances: is 1"},
		{"one stage", func(x *TTotal) { x.Timeline = x.Timeline[:1] }, "timeline: has 1 stages"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := testTTotal(m)
			if tt.mutate == nil {
				x.TTotalS = 300.04
				if errs := x.Verify(); len(errs) > 0 {
					t.Fatalf("within tolerance: %v", errs)
				}
				return
			}
			tt.mutate(x)
			if msg := errors.Join(x.Verify()...); msg == nil || !strings.Contains(msg.Error(), tt.want) {
				t.Fatalf("Verify() = %v, want a problem containing %q", msg, tt.want)
			}
		})
	}
}

func TestPlanVerifyCatchesEdits(t *testing.T) {
	p, err := LoadPlan(filepath.Join("..", "testdata", "plans", "valid", PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	if errs := p.Verify(); len(errs) > 0 {
		t.Fatalf("valid fixture: %v", errs)
	}
	for _, tt := range []struct {
		name   string
		mutate func(*Plan)
		want   string
	}{
		{"raised threshold", func(p *Plan) { p.Derived.TargetValue = 45 }, "derived.target_value is 45 but the inputs give 32.4257"},
		{"scale-in window shortened", func(p *Plan) { p.Derived.ScaleInEvaluationPeriods = 3 }, "derived.scale_in_evaluation_periods is 3 but the inputs give 35"},
		{"envelope softened", func(p *Plan) { p.Envelope.Traces[1].ViolationMinutes = 0; p.Envelope.Traces[1].ScaleOuts = 1 }, "envelope.traces[1].scale_outs is 1 but the inputs give 6"},
		{"raised fleet", func(p *Plan) { p.Derived.MaxInstances = 9 }, "derived.max_instances"},
		{"verdict flipped", func(p *Plan) { p.Verdict = VerdictInfeasible }, `verdict: is "infeasible" but the findings give "feasible"`},
		{"finding softened", func(p *Plan) { p.Inputs.PeakRPS = 500; p.Derived = derive(p.Inputs) }, "findings.peak_coverage: is pass but the inputs give fail"},
		{"finding dropped", func(p *Plan) { p.Findings = p.Findings[1:] }, "findings: measurement_validity is missing"},
		{"unknown status", func(p *Plan) { p.Findings[0].Status = "ok" }, `"ok" is not pass, warn or fail`},
		{"surge out of range", func(p *Plan) { p.Inputs.SurgeRatio = 10.5 }, "inputs.surge_ratio: is 10.5"},
		{"artifact path", func(p *Plan) { p.Inputs.QMaxFile = "../qmax.json" }, "plain file name"},
		{"what-if with artifacts", func(p *Plan) { p.Measured = false }, "records no artifacts"},
		{"measured without digest", func(p *Plan) { p.Fingerprint.ContainerDigest = "" }, "fingerprint.container_digest"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadPlan(filepath.Join("..", "testdata", "plans", "valid", PlanFile))
			if err != nil {
				t.Fatal(err)
			}
			tt.mutate(c)
			if msg := errors.Join(c.Verify()...); msg == nil || !strings.Contains(msg.Error(), tt.want) {
				t.Fatalf("Verify() = %v, want a problem containing %q", msg, tt.want)
			}
		})
	}
}

func TestWriteFileAtomicReplacesWholeFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "deep", "plan.json")
	for _, content := range []string{"first\n", "second, longer\n", "3\n"} {
		if err := WriteFileAtomic(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("%d entries left in the directory, want only the file", len(entries))
	}
	if err := WriteFileAtomic(filepath.Join(path, "x"), []byte("x")); err == nil {
		t.Fatal("writing below a file succeeded")
	}
}

func TestSourceDigest(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	digest := func() string {
		t.Helper()
		d, err := SourceDigest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !ValidDigest(d) {
			t.Fatalf("digest %q is not sha256:<hex>", d)
		}
		return d
	}
	write("Dockerfile", "FROM scratch\n", 0o644)
	write("internal/server/server.go", "package server\n", 0o644)
	base := digest()
	if digest() != base {
		t.Fatal("digest is not deterministic")
	}
	write(".git/HEAD", "ref: refs/heads/main\n", 0o644)
	write("sub/.git", "gitdir: ../.git/modules/sub\n", 0o644)
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if digest() != base {
		t.Fatal(".git entries or empty directories changed the digest")
	}
	changes := []func(){
		func() { write("internal/server/server.go", "package server // edited\n", 0o644) },
		func() { write("internal/server/server.go", "package server\n", 0o755) },
		func() { write(".dockerignore", "bin\n", 0o644) },
		func() {
			_ = os.Remove(filepath.Join(dir, ".dockerignore"))
			_ = os.Rename(filepath.Join(dir, "Dockerfile"), filepath.Join(dir, "Dockerfile2"))
		},
	}
	seen := map[string]bool{base: true}
	for i, change := range changes {
		change()
		d := digest()
		if seen[d] {
			t.Fatalf("change %d did not produce a new digest", i)
		}
		seen[d] = true
	}
	if _, err := SourceDigest(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing directory has a digest")
	}
}

// Every numeric field of a loaded artifact has bounds, and the message states them.
func TestArtifactFieldBounds(t *testing.T) {
	m := kokoro(t)
	for _, tt := range []struct {
		name string
		edit func(q *QMax, tt *TTotal)
		want string
	}{
		{"achieved rps 1e300", func(q *QMax, _ *TTotal) { q.Steps[1].AchievedRPS = 1e300 }, "steps[1].achieved_rps: is 1e+300: want a number in [0, 1e+06]"},
		{"latency beyond a day", func(q *QMax, _ *TTotal) { q.Steps[2].TTFABP99Ms = 1e12 }, "steps[2].ttfab_p99_ms: is 1e+12: want a number in [0, 8.64e+07]"},
		{"concurrency huge", func(q *QMax, _ *TTotal) { q.Steps[5].Concurrency = 1 << 40 }, "steps[5].concurrency: is 1099511627776: want 1 to 100000"},
		{"count huge", func(q *QMax, _ *TTotal) { q.Steps[0].OKCount = 1 << 40 }, "steps[0].ok_count: is 1099511627776: want 0 to 1000000000"},
		{"too many steps", func(q *QMax, _ *TTotal) {
			for len(q.Steps) <= MaxQMaxSteps {
				q.Steps = append(q.Steps, q.Steps[0])
			}
		}, "steps: has 257 steps: at most 256"},
		{"t_total beyond a day", func(_ *QMax, tt *TTotal) { tt.TTotalS = 1e300 }, "t_total_s: is 1e+300: want a number of seconds in (0, 86400]"},
		{"to_instances huge", func(_ *QMax, tt *TTotal) { tt.ToInstances = 1 << 40 }, "to_instances: is 1099511627776: want above from_instances 1, at most 100000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, ttl := testQMax(m), testTTotal(m)
			tt.edit(q, ttl)
			errs := append(q.Verify(), ttl.Verify()...)
			if !strings.Contains(errors.Join(errs...).Error(), tt.want) {
				t.Fatalf("errs = %v, want one containing %q", errs, tt.want)
			}
		})
	}
}

// TestLoadEveryKind loads each artifact kind through its exported Load and Parse: a valid file round-trips;
// a file over the kind's size limit is refused with the kind and the limit named; an unknown field is a
// *LoadError of that kind naming the file.
func TestLoadEveryKind(t *testing.T) {
	m := kokoro(t)
	plan, err := LoadPlan(filepath.Join("..", "testdata", "plans", "valid", PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		kind, limit string
		maxBytes    int
		value       any
		load        func(path string) (any, error)
		parse       func(source string, data []byte) (any, error)
	}{
		{"qmax", "4 MiB", MaxQMaxBytes, testQMax(m),
			func(p string) (any, error) { return LoadQMax(p) }, func(s string, d []byte) (any, error) { return ParseQMax(s, d) }},
		{"ttotal", "1 MiB", MaxTTotalBytes, testTTotal(m),
			func(p string) (any, error) { return LoadTTotal(p) }, func(s string, d []byte) (any, error) { return ParseTTotal(s, d) }},
		{"plan", "1 MiB", MaxPlanBytes, plan,
			func(p string) (any, error) { return LoadPlan(p) }, func(s string, d []byte) (any, error) { return ParsePlan(s, d) }},
	} {
		t.Run(c.kind, func(t *testing.T) {
			path := filepath.Join(dir, c.kind+".json")
			if err := WriteJSON(path, c.value); err != nil {
				t.Fatal(err)
			}
			got, err := c.load(path)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := MarshalArtifact(c.value)
			if again, _ := MarshalArtifact(got); string(again) != string(want) {
				t.Fatalf("round trip changed the artifact:\n%s\nwant\n%s", again, want)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// One byte over the limit: the JSON padded with spaces, which would still decode.
			big := filepath.Join(dir, c.kind+"-big.json")
			if err := os.WriteFile(big, append(data, strings.Repeat(" ", c.maxBytes+1-len(data))...), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := c.load(big); err == nil || !strings.Contains(err.Error(), "read "+c.kind+" artifact: ") ||
				!strings.Contains(err.Error(), "larger than the "+c.limit+" limit") {
				t.Fatalf("load of a file over the limit = %v", err)
			}
			var raw map[string]any
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatal(err)
			}
			raw["colour"] = "blue"
			edited, _ := json.Marshal(raw)
			bad := filepath.Join(dir, c.kind+"-bad.json")
			if err := os.WriteFile(bad, edited, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, e := range []struct {
				source string
				err    error
			}{
				{bad, func() error { _, err := c.load(bad); return err }()},
				{"input", func() error { _, err := c.parse("input", edited); return err }()},
			} {
				var le *LoadError
				if !errors.As(e.err, &le) || le.Kind != c.kind || le.Source != e.source ||
					!strings.Contains(e.err.Error(), e.source+" is not a valid "+c.kind+" artifact") || !strings.Contains(e.err.Error(), "colour: unknown field") {
					t.Errorf("unknown field from %s: %v, want a *LoadError of kind %s", e.source, e.err, c.kind)
				}
			}
		})
	}
}
