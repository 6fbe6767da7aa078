// Package bench is the load engine: a closed-loop concurrency staircase, its transports, raw per-request
// records and the judgement of each step. It parses no flags and makes no control-plane calls; tts-bench
// qmax reads CloudWatch and pins the endpoint around it.
//
// Closed loop, concurrency C: C workers, each sending its next request only when its previous one ended
// (Config, RunStep). A Staircase says which concurrency to measure next: the steps given, extended while
// every step passes, then Bisect between the highest pass and the lowest fail. Each step has a settle, a hold whose last part is the measure window, and two
// deadlines after k6's executors: stop starting, then a hard stop after a grace (Config documents the timeline).
// A request that failed with no answer at all (refused, reset) is followed by a pause of NoAnswerPause, so a
// dead server does not turn every worker into a tight loop of records.
//
// Transports (Transport): SageMakerStream (InvokeEndpointWithResponseStream through the SDK via
// InvokeStream, one client per worker because of aws/smithy-go#714) and HTTP (a direct POST to a
// container's /invocations). Both time the first audio byte after any WAV header (ReadStream) from just
// before the request is handed to the client, and keep every audio arrival to compute the playback stall
// (Stall): the longest time by which audio arrived after a real-time player, started at the first audio
// byte, needed it. TTFAB alone can be gamed by a scheduler that serves first chunks first; the stall shows
// the continuations it starves.
//
// Every request becomes a Record (one JSON line; RecordWriter, ReadRecords); a step's numbers are folded
// over its records afterwards (Summarize, SummarizeStep), with exact nearest-rank percentiles, so a records
// file re-reports with the same numbers. A step meets the SLO when its SLO-percentile TTFAB ≤ SLO, its p95
// stall ≤ the stall budget + jitter (DefaultStallJitter, 50 ms) and at most MaxErrorRate of its measured
// requests failed (errors, timeouts and 503 sheds count against it). It is unusable, and says why, when the
// client could not hold its concurrency (mean in-flight below MinConcurrencyRatio·C, with the client's
// scheduling lag reported), too few requests succeeded, or errors exceeded the bound.
//
// Request texts come from a Corpus: DefaultCorpus is seeded and deterministic (its doc states the length
// distribution); ParagraphCorpus(n) is every run of n consecutive built-in sentences (multi-segment texts for
// scheduler comparisons); LoadCorpus reads one text per line.
package bench
