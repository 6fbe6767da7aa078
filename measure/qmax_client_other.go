//go:build !unix

package measure

import "time"

// processCPU is not measured on this platform: the CPU check never trips.
func processCPU() time.Duration { return 0 }
