// Package capacity turns measurements into an autoscaling plan and decides whether a deployment may use it.
//
// It holds the three artifacts as Go types with a schema version — QMax (the highest per-instance
// concurrency that meets the latency SLO, from a closed-loop staircase), TTotal (the time from asking for one
// more instance until it serves, as a timeline of stages) and Plan (thresholds, cooldowns, fleet bounds,
// findings and a verdict) — with strict loading, Verify methods that report every problem at once, atomic
// writes and SHA-256 digests. Build derives a Plan from the artifacts (or from what-if numbers), and Gate is
// the one decision the endpoint stack and the local deploy both use: scaling is created only from a measured,
// live, feasible plan whose artifacts and fingerprint match what is being deployed.
//
// The package talks to no cloud API and imports no CDK code.
package capacity
