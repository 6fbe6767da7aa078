package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/speech-infra/speech-infra/internal/cliflags"
)

// -version prints the build's version on stdout and starts nothing.
func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-version"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if want := "demo " + cliflags.Version() + "\n"; stdout.String() != want || stderr.Len() != 0 {
		t.Errorf("stdout %q, stderr %q; want %q and nothing on stderr", stdout.String(), stderr.String(), want)
	}
}
