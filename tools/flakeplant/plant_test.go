//go:build flakeplant

package flakeplant

import (
	"crypto/sha256"
	"runtime"
	"sync"
	"testing"
	"time"
)

// spin does a fixed amount of CPU work.
func spin() {
	b := make([]byte, 1<<16)
	for range 400 {
		s := sha256.Sum256(b)
		b[0] = s[0]
	}
}

// TestPlantedSlowGoroutine times spin alone, then runs it on two goroutines at once and fails when they took
// 20% longer than it did alone. On an idle machine with two cores each goroutine has a core and the test
// passes; beside busy loops the goroutines wait for a core, and it fails: a deadline on a goroutine's speed.
func TestPlantedSlowGoroutine(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Fatalf("needs two cores for the goroutines, has GOMAXPROCS %d", runtime.GOMAXPROCS(0))
	}
	start := time.Now()
	spin()
	alone := time.Since(start)
	start = time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); spin() }()
	}
	wg.Wait()
	if both := time.Since(start); both > alone*12/10 {
		t.Fatalf("the goroutines were slow: %s together against %s alone", both, alone)
	}
}
