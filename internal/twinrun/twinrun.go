// Package twinrun holds the short T_total run of the Kokoro twin on ml.g5.xlarge on the local emulator that make
// demo and the benchmark smoke (perf/cost -smoke) share, so that the two measure the same thing and a change to
// one reaches both.
package twinrun

// TTotalArgs is a short tts-bench ttotal run of the twin after a closed-loop ladder that ends at 192 in flight
// (past the SLO): a probe of 160 in flight, a bounded wait. One instance at 160 is past the SLO (p95 TTFAB 3.8
// to 3.9 s on the twin after the warm-up), which a probe must be to measure a recovery (measurement_validity
// fails a probe that never exceeded the SLO; after a 25-s warm-up it had not yet, after 30 s it had, by about
// 0.7 s). traffic_recovered waits for the oldest request sent before in_service to end (a window counts only
// requests sent before the oldest still in flight), which the new first segments keep arriving ahead of: with 80
// per instance after the scale-out it ended 21 to 29 s after in_service in eight runs, with 96 (a probe of 192,
// ttotal's default) 21 to 39 s in four. Recovery is judged against the SLO itself (--tolerance 3 puts min(SLO,
// the qmax curve's p95 after the scale-out × the tolerance) at the SLO): the curve is the chord between the
// ladder's steps, and the twin's p95 at 80 per instance, about 2 s, lies well above the chord's 1.1 s, so the
// default 1.25 put the target at what the recovered probe measures, and the wait on noise.
var TTotalArgs = []string{"--probe-concurrency", "160", "--warmup", "35s", "--tolerance", "3", "--window", "20s", "--min-samples", "20", "--max-wait", "4m"}
