package cloud_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/cloud"
)

func TestMarkerValueRoundTrip(t *testing.T) {
	start := time.Date(2026, 1, 30, 12, 0, 0, 0, time.UTC)
	m := cloud.Marker{RunID: "qmax-20260130T120000Z-1a2b3c4d", Owner: "alice@box.example", PID: 4242, Started: start, Expires: start.Add(90 * time.Minute)}
	v := m.Value()
	if len(v) > 256 || strings.ContainsAny(v, `{}",`) {
		t.Fatalf("marker value %q does not fit SageMaker's TagValue", v)
	}
	got, err := cloud.ParseMarker(v)
	if err != nil || got != m {
		t.Fatalf("ParseMarker(%q) = %+v, %v; want %+v", v, got, err, m)
	}
	if _, err := cloud.ParseMarker("run=x owner=y"); err == nil || !strings.Contains(err.Error(), "no start time") {
		t.Fatalf("a partial marker parsed: %v", err)
	}
	if o := cloud.CurrentOwner(); !strings.Contains(o, "@") || len(o) > 64 {
		t.Fatalf("CurrentOwner() = %q", o)
	}
}

// otherMarker puts another run's marker on the world's endpoint, expiring at expires.
func otherMarker(w *world, expires time.Time) cloud.Marker {
	m := cloud.Marker{RunID: "qmax-other", Owner: "bob@elsewhere", PID: 77, Started: expires.Add(-time.Hour).UTC().Truncate(time.Second), Expires: expires.UTC().Truncate(time.Second)}
	w.tags[cloud.MarkerTagKey] = m.Value()
	return m
}

// Another run's live marker is refused before anything is written, naming the run, its owner, its start and
// expiry and how to clear it; OverrideExpired (--force) does not override it.
func TestFreezeRefusesLiveMarker(t *testing.T) {
	for _, force := range []bool{false, true} {
		dir := t.TempDir()
		w := newWorld(2, nil)
		m := otherMarker(w, time.Now().Add(time.Hour))
		o := freezeOptions(dir)
		o.OverrideExpired = force
		_, err := cloud.Freeze(t.Context(), w.clients(), o)
		if !errors.Is(err, cloud.ErrEndpointInUse) {
			t.Fatalf("force=%v: freeze = %v, want ErrEndpointInUse", force, err)
		}
		for _, want := range []string{"run qmax-other by bob@elsewhere (pid 77)", "started " + m.Started.Format(time.RFC3339), "expires " + m.Expires.Format(time.RFC3339),
			"tts-bench thaw --endpoint " + worldEndpoint, "--force does not override a live marker"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("force=%v: the refusal does not say %q:\n%v", force, want, err)
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 || w.desired != 2 || w.tags[cloud.MarkerTagKey] != m.Value() {
			t.Fatalf("force=%v: a refused freeze changed something: journal dir %v, desired %d, tags %v", force, ents, w.desired, w.tags)
		}
	}
}

// An expired marker is refused and named as expired without OverrideExpired, and replaced with it.
func TestFreezeExpiredMarker(t *testing.T) {
	dir := t.TempDir()
	w := newWorld(2, nil)
	old := otherMarker(w, time.Now().Add(-time.Minute))
	_, err := cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir))
	if !errors.Is(err, cloud.ErrEndpointInUse) || !strings.Contains(err.Error(), "EXPIRED measurement marker of run qmax-other") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("freeze over an expired marker = %v", err)
	}
	o := freezeOptions(dir)
	o.OverrideExpired = true
	o.Duration = 10 * time.Minute
	fr, err := cloud.Freeze(t.Context(), w.clients(), o)
	if err != nil {
		t.Fatal(err)
	}
	if fr.Overridden == nil || fr.Overridden.Marker == nil || *fr.Overridden.Marker != old {
		t.Fatalf("Overridden = %+v, want the old marker", fr.Overridden)
	}
	got, err := cloud.ParseMarker(w.tags[cloud.MarkerTagKey])
	if err != nil || got.RunID != "run-1" || got.Expires.Sub(got.Started) != 10*time.Minute+cloud.MarkerMargin {
		t.Fatalf("marker after the override = %+v, %v", got, err)
	}
	if _, err := cloud.Restore(t.Context(), w.clients(), fr.Path, fast); err != nil || len(w.tags) != 0 {
		t.Fatalf("restore = %v, tags %v", err, w.tags)
	}
}

// Dynamic scaling already suspended without a marker of this run: refused before anything is written, even
// with OverrideExpired.
func TestFreezeRefusesSuspendedScaling(t *testing.T) {
	dir := t.TempDir()
	w := newWorld(1, target(1, 1, cloud.Suspension{DynamicIn: true, DynamicOut: true, Scheduled: true}))
	o := freezeOptions(dir)
	o.OverrideExpired = true
	_, err := cloud.Freeze(t.Context(), w.clients(), o)
	if !errors.Is(err, cloud.ErrEndpointInUse) || !strings.Contains(err.Error(), "already suspended") || !strings.Contains(err.Error(), "--force does not override this") {
		t.Fatalf("freeze of a suspended target = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 || len(w.tags) != 0 {
		t.Fatalf("a refused freeze wrote: %v, tags %v", ents, w.tags)
	}
}

// Restore leaves another run's marker (a note), and thaw --force removes it, saying whose it was.
func TestRestoreLeavesAnotherRunsMarker(t *testing.T) {
	dir := t.TempDir()
	w := newWorld(2, nil)
	fr, err := cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	otherMarker(w, time.Now().Add(time.Hour)) // as if another run had overwritten it
	res, err := cloud.Restore(t.Context(), w.clients(), fr.Path, fast)
	if err != nil || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "another run's") || w.tags[cloud.MarkerTagKey] == "" {
		t.Fatalf("restore = %+v, %v, tags %v", res, err, w.tags)
	}
	// Without a journal, thaw refuses a marked endpoint, and --force removes the marker.
	th := cloud.ThawOptions{JournalDir: dir, Endpoint: worldEndpoint, Variant: worldVariant, Wait: fast}
	if _, err := cloud.Thaw(t.Context(), w.clients(), th); !errors.Is(err, cloud.ErrEndpointInUse) || !strings.Contains(err.Error(), "run qmax-other by bob@elsewhere") {
		t.Fatalf("thaw of a marked endpoint without a journal = %v", err)
	}
	th.Force = true
	r, err := cloud.Thaw(t.Context(), w.clients(), th)
	if err != nil || len(w.tags) != 0 || len(r.Changes) != 1 || !strings.Contains(r.Changes[0], "removed the measurement marker of another run (--force): run qmax-other") {
		t.Fatalf("thaw --force = %+v, %v, tags %v", r, err, w.tags)
	}
}
