//go:build !unix

package main

import "time"

// processCPU is not measured on this platform: the CPU check never trips.
func processCPU() time.Duration { return 0 }
