package measure

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/bench"
)

func TestCheckQueue(t *testing.T) {
	o := &QMax{Ladder: bench.Staircase{Steps: []int{1, 2, 4, 8}, Extension: 10, Max: 8}}
	o.Model.ID = "espeak-ng"
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"QUEUE_MAX_DEPTH": "0"}, ""},
		{map[string]string{"QUEUE_MAX_DEPTH": "4"}, "the ladder reaches concurrency 8"},
		{map[string]string{"QUEUE_MAX_DEPTH": "7"}, "QUEUE_MAX_DEPTH=7"},
		{map[string]string{"QUEUE_MAX_DEPTH": "8"}, ""},
		{map[string]string{"QUEUE_MAX_DEPTH": "x"}, "not a depth"},
		{map[string]string{"QUEUE_MAX_DEPTH": "-1"}, "not a depth"},
		{map[string]string{}, "sets no QUEUE_MAX_DEPTH"},
	} {
		err := o.checkQueue(tt.env, "m")
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("checkQueue(%v) = %v, want %q", tt.env, err, tt.want)
		}
	}
}

// probeWritable creates a missing directory below a writable one.
func TestProbeWritable(t *testing.T) {
	if err := probeWritable(filepath.Join(t.TempDir(), "a", "b")); err != nil {
		t.Errorf("a new directory below a writable one: %v", err)
	}
}
