package capacity

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/internal/strictjson"
)

// FuzzParseArtifacts feeds arbitrary bytes to every artifact parser and, when one accepts, to Verify: no input
// may panic. Plain go test runs the seed corpus: the fixtures and a few malformed inputs.
func FuzzParseArtifacts(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "plans", "*", "*.json"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "null", "[]", "{}", `{"schema_version":1}`, `{"steps":[null,{}]}`, `{"timeline":[{"at":"x"}]}`,
		`{"inputs":{"throughput":[{"concurrency":-1,"rps":1e308}]}}`, `{"findings":[{}]}`, `{"a":{"b":{"c":[[[]]]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if q, err := ParseQMax("fuzz", data); err == nil {
			q.Verify()
			q.throughputCurve()
			q.cloudWatchRatio(10)
		}
		if tt, err := ParseTTotal("fuzz", data); err == nil {
			tt.Verify()
		}
		if p, err := ParsePlan("fuzz", data); err == nil {
			p.Verify()
		}
	})
}

// artifactSetFiles are the files of the gate's artifact set, in the order the fuzz target numbers them.
var artifactSetFiles = []string{PlanFile, QMaxFile, TTotalFile}

// Mutations FuzzGateArtifactSet applies to one file of the set.
const (
	mutDelete = iota
	mutTruncate
	mutOverwrite
	mutInsert
	mutSubstitute
	mutDirectory
	mutFIFO
	mutSymlink
	mutCount
)

// FuzzGateArtifactSet breaks the valid fixture's artifact set (plan.json, qmax.json, ttotal.json) in one
// place: a file deleted, truncated, overwritten or grown at some offset, replaced by another fixture's file
// of any kind, by a directory, a FIFO or a symbolic link. The gate must refuse the set unless it is still
// intact: qmax.json and ttotal.json byte for byte, and plan.json decoding to the same plan. It must also accept
// every intact set, and never block. Plain go test runs the seed corpus in testdata/fuzz/FuzzGateArtifactSet.
func FuzzGateArtifactSet(f *testing.F) {
	src := filepath.Join("..", "testdata", "plans", "valid")
	orig := map[string][]byte{}
	for _, name := range artifactSetFiles {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			f.Fatal(err)
		}
		orig[name] = data
	}
	// The qmax artifact's raw records sit beside the set, unbroken (the records check has its own tests).
	records, err := os.ReadFile(filepath.Join(src, fixtureRecordsFile))
	if err != nil {
		f.Fatal(err)
	}
	origPlan, err := ParsePlan("valid", orig[PlanFile])
	if err != nil {
		f.Fatal(err)
	}
	// Substitutes: every file of every fixture, of every kind.
	var substitutes [][]byte
	subs, _ := filepath.Glob(filepath.Join("..", "testdata", "plans", "*", "*.json"))
	for _, name := range subs {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		substitutes = append(substitutes, data)
	}
	for target := range artifactSetFiles {
		for op := 0; op < mutCount; op++ {
			f.Add(uint8(target), uint8(op), uint32(100), []byte(`"`))
		}
	}
	f.Add(uint8(0), uint8(mutOverwrite), uint32(0), []byte(" "))             // whitespace before the object: same plan
	f.Add(uint8(0), uint8(mutInsert), uint32(1), []byte(`"measured":true,`)) // a duplicate key
	f.Fuzz(func(t *testing.T, target, op uint8, pos uint32, val []byte) {
		name := artifactSetFiles[int(target)%len(artifactSetFiles)]
		dir := t.TempDir()
		for _, n := range artifactSetFiles {
			if err := os.WriteFile(filepath.Join(dir, n), orig[n], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fixtureRecordsFile), records, 0o644); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		data := orig[name]
		at := int(pos % uint32(len(data)+1))
		write := func(b []byte) {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		switch int(op) % mutCount {
		case mutDelete:
			rm(t, path)
		case mutTruncate:
			write(data[:at])
		case mutOverwrite:
			b := append([]byte(nil), data...)
			copy(b[at:], val)
			write(append(b[:at], append(val, data[min(len(data), at+len(val)):]...)...))
		case mutInsert:
			write(append(append(append([]byte(nil), data[:at]...), val...), data[at:]...))
		case mutSubstitute:
			write(substitutes[int(pos)%len(substitutes)])
		case mutDirectory:
			rm(t, path)
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		case mutFIFO:
			rm(t, path)
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		case mutSymlink:
			// A link to an identical file elsewhere: the content is intact, so the gate may accept it.
			other := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(other, data, 0o644); err != nil {
				t.Fatal(err)
			}
			rm(t, path)
			if err := os.Symlink(other, path); err != nil {
				t.Fatal(err)
			}
		}

		intact := true
		for _, n := range artifactSetFiles {
			got, err := strictjson.ReadFile(filepath.Join(dir, n), MaxQMaxBytes) // a FIFO must not block the check
			switch {
			case err != nil:
				intact = false
			case n == PlanFile:
				p, err := ParsePlan("mutated", got)
				intact = intact && err == nil && reflect.DeepEqual(p, origPlan)
			default:
				intact = intact && bytes.Equal(got, orig[n])
			}
		}
		done := make(chan Decision, 1)
		go func() { done <- Gate(fixtureDeployment(t), filepath.Join(dir, PlanFile)) }()
		var dec Decision
		select {
		case dec = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("Gate did not return within 30 s")
		}
		if dec.Enabled && !intact {
			t.Fatalf("the gate accepted a broken set (%s, mutation %d at %d, %q)", name, int(op)%mutCount, at, val)
		}
		if !dec.Enabled && intact {
			t.Fatalf("the gate refused an intact set (%s, mutation %d at %d, %q): %q", name, int(op)%mutCount, at, val, dec.Reasons)
		}
		if !dec.Enabled && len(dec.Reasons) == 0 {
			t.Fatal("refused without a reason")
		}
	})
}
