//go:build leakplant

package main

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestPlantedEmulatorLeak starts the local emulator as `deploy --local` does and never stops it: a leak on
// purpose, built only with the leakplant tag, so that `make check-leaks-selftest` can show
// scripts/check-leaks.sh catching it. make test never builds it.
func TestPlantedEmulatorLeak(t *testing.T) {
	state := t.TempDir()
	localEnvFor(t, state)
	port, err := strconv.Atoi(os.Getenv("SPEECH_INFRA_PORT"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := connectEmulator(ctx, emulatorSettings{stateDir: state, port: port, containerBin: os.Getenv("SPEECH_CONTAINER_BIN")}); err != nil {
		t.Fatal(err)
	}
}
