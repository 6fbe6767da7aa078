// Package measure is tts-bench's measurement engine: it runs a measurement that the command resolved from its
// command line and writes the artifacts.
//
//   - QMax measures Q_max: the closed-loop staircase and its bisection (docs/design.md, "Closed loop"), then the
//     rate staircase of Poisson arrivals (docs/design.md, "Open loop, too"); an interrupted run keeps its
//     finished steps as a partial artifact that --resume continues. It writes the records, the staircase and
//     rate charts and the qmax artifact.
//   - TTotal measures T_total: one more instance under a closed-loop probe, its stages and their recovery
//     (docs/design.md, "T_total"), and writes the ttotal artifact and its waterfall chart.
//   - Compare compares instance types (docs/design.md, "Instance types side by side"): per type a measurement
//     endpoint of its own, drift, qmax and ttotal (the command's own code), a plan for the trace's peak and
//     trough simulated on the trace, and the endpoint destroyed on every path; then the report and its chart.
//   - Both measurements work through a session that checks drift, writes the journal, marks the endpoint, freezes and pins it,
//     and restores it at the end, on an error, on SIGINT and on SIGTERM (docs/design.md, "Freeze, pin, restore").
//   - Replay drives a traffic trace (one shard of it) as open-loop load against the endpoint, records every
//     request and the instance counts, and reports per minute; the replay report merges the records files of a
//     replay's shards into one.
//   - The charts: a staircase, a rate staircase, a T_total waterfall, a comparison of instance types and a
//     simulated timeline.
//
// The engine reaches AWS only through cloud, and prints what it does on the stderr it is given, prefixed with
// the command and the model ("qmax espeak-ng: ..."); the live view of a step is a bar on a terminal, plain
// lines elsewhere.
package measure
