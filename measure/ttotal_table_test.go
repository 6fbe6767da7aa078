package measure

import (
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
)

// T_total prints with its uncertainty, never to the millisecond.
func TestFormatTTotal(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tt := &capacity.TTotal{TTotalS: 283.4567, Timeline: []capacity.Stage{{Stage: "desired_set", At: at}, {Stage: "traffic_recovered", At: at}}}
	for _, c := range []struct {
		u    *float64
		want string
	}{
		{ptr(2.0), "283 s ± 2 s"}, {ptr(1.2), "283 s ± 2 s"}, {ptr(0.93), "283.5 s ± 1.0 s"}, {ptr(0.04), "283.46 s ± 0.04 s"},
		{ptr(0), "283.46 s (it ends on traffic_recovered, a time no poll delays)"}, {nil, "283.5 s (uncertainty not recorded)"},
	} {
		tt.TTotalUncertaintyS = c.u
		if got := formatTTotal(tt); got != c.want {
			t.Errorf("uncertainty %v: %q, want %q", c.u, got, c.want)
		}
	}
}

func ptr(v float64) *float64 { return &v }
