package emulatortest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// The tail a failed test prints holds the last logTailLines lines, whole, whatever the writes' boundaries, and
// takes writes from several goroutines (the emulator logs from its loops and handlers).
func TestLogTailKeepsTheLastLines(t *testing.T) {
	var l logTail
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				fmt.Fprintf(&l, "g%d line %d\n", g, i)
			}
		}()
	}
	wg.Wait()
	fmt.Fprint(&l, "split ")
	fmt.Fprint(&l, "line\nlast, unfinished")
	lines := strings.Split(l.String(), "\n")
	if len(lines) != logTailLines+1 || lines[len(lines)-2] != "split line" || lines[len(lines)-1] != "last, unfinished" {
		t.Fatalf("%d lines, ending %q", len(lines), lines[len(lines)-3:])
	}
	for _, s := range lines[:len(lines)-2] {
		if !strings.HasPrefix(s, "g") || !strings.Contains(s, " line ") {
			t.Fatalf("a line was cut: %q", s)
		}
	}
}
