// Command planregen derives again the plans kept as test data beside their qmax and ttotal artifacts but
// without the raw records that tts-bench plan checks the qmax figures against: each plan is rebuilt from the
// artifacts beside it and the options it records, as the deploy gate rebuilds a plan (capacity.Gate), and
// written in place. A change to the instance model or to the simulator moves what these plans hold; the test
// beside this file fails while a committed one differs from its rebuild.
//
// Usage, from the repository root:
//
//	go run ./capacity/internal/planregen [DIR...]
//
// With no DIR it rewrites every directory in Dirs.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
)

// Dirs are the plan directories this command keeps, relative to the repository root.
var Dirs = []string{
	filepath.Join("cmd", "tts-bench", "testdata", "simulate-twin"),
	filepath.Join("cmd", "tts-bench", "testdata", "simulate-espeak-ng"),
}

func main() {
	dirs := os.Args[1:]
	if len(dirs) == 0 {
		dirs = Dirs
	}
	for _, d := range dirs {
		data, err := Rebuild(context.Background(), d)
		if err == nil {
			err = capacity.WriteFileAtomic(filepath.Join(d, capacity.PlanFile), data)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "planregen: %s: %v\n", d, err)
			os.Exit(1)
		}
		fmt.Printf("planregen: rewrote %s\n", filepath.Join(d, capacity.PlanFile))
	}
}

// Rebuild returns the plan in dir rebuilt from the qmax and ttotal artifacts it names and the options it
// records, as the file capacity.WriteJSON writes.
func Rebuild(ctx context.Context, dir string) ([]byte, error) {
	p, err := capacity.LoadPlan(filepath.Join(dir, capacity.PlanFile))
	if err != nil {
		return nil, err
	}
	if !p.Measured {
		return nil, errors.New("the plan is a what-if: it has no artifacts to be rebuilt from")
	}
	in := p.Inputs
	read := func(name string) ([]byte, string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		return b, filepath.Join(dir, name), err
	}
	qb, qpath, err := read(in.QMaxFile)
	if err != nil {
		return nil, err
	}
	tb, tpath, err := read(in.TTotalFile)
	if err != nil {
		return nil, err
	}
	q, err := capacity.ParseQMax(qpath, qb)
	if err != nil {
		return nil, err
	}
	t, err := capacity.ParseTTotal(tpath, tb)
	if err != nil {
		return nil, err
	}
	cat, err := models.Default()
	if err != nil {
		return nil, err
	}
	m, err := cat.Get(p.Fingerprint.Model)
	if err != nil {
		return nil, err
	}
	rebuilt, err := capacity.FromArtifactsContext(ctx, m, capacity.Measurement{
		QMax: q, QMaxFile: in.QMaxFile, QMaxSHA256: capacity.DigestBytes(qb), TTotal: t, TTotalFile: in.TTotalFile, TTotalSHA256: capacity.DigestBytes(tb),
	}, in.PlanOptions())
	if err != nil {
		return nil, err
	}
	return capacity.MarshalArtifact(rebuilt)
}
