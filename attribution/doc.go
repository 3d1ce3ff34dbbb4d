// Package attribution tells provider changes from customer-content shifts.
//
// The corpus is the control group. Production block counts per segment
// (target × normalized category) are read from a JSONL file or a Prometheus
// range query; each series gets at most one change point; each change is
// then set against driftprobe's probe history on the same target:
//
//   - provider: an event involving the target has probe flips that started
//     in the same window, moved blocking in the same direction, and touch
//     the production category (the probes' before/after categories or their
//     corpus tags; the empty category, "all blocks", matches any).
//   - traffic: the corpus covers the category, the target has complete,
//     non-degraded runs on both sides of the change (at least one before,
//     at least confirm_runs after, within the series' span, none counted
//     from inside a production gap), no event touched the target in the
//     window, and the probes actually held still (see "Held still"): so
//     the customers' content moved.
//   - inconclusive, with a reason: an event moved the category the other
//     way or without changing whether it blocks (including score drift
//     in no single direction), the corpus does not cover
//     the category, an event in other categories only happened in the same
//     window, runs are missing or degraded on one side, production is
//     missing around the change and the matching flips explain only part
//     of the gap (provider and traffic both fit), or the category's probes
//     did not hold still (marked nondeterministic, or flipping without a
//     confirmed flip to explain it; the nondeterminism events are named),
//     or no probe has a verdict on the same bytes on both sides.
//
// # Held still
//
// The compared runs are the target's complete runs that started within
// the series' span. A probe of the category (tagged with it, or with a
// verdict naming it; every probe for all blocks) is unstable when a
// nondeterminism event marks it within the compared runs, when samples of
// one run disagree on the same bytes, or when its verdicts in two
// consecutive compared runs in which it answered differ on the same
// request bytes and no confirmed flip of that probe (an event other than
// nondeterminism, not withdrawn: first seen in the later run, or a revert
// that is not a move on whose window holds it) explains the change with a
// window that reaches back to the earlier run (a probe with no verdict in
// the runs between did not hold still there, unless the span between its
// answers, widened by the tolerance, misses the change). One unstable probe makes the change inconclusive: a probe that
// flips at random cannot show that the provider held still. With per-run
// verdicts read (History.Verdicts, LoadVerdicts; AttributeStore), traffic also needs a
// witness: a probe whose verdict on the same bytes was identical from a
// run before the change to a run after it. Without them only the
// nondeterminism marks are checked, and the traffic reason says so.
// attributor.stillness states the rule in full.
//
// # Contracts
//
// Segments: a Series' Target is a configured target name; its Category is
// "" (every block on the target) or a name in driftprobe's normalized
// vocabulary (probes.Categories), see NormalizeCategory.
//
// Points: a Point's Time is the start of the interval its counts cover;
// its counts lie between 0 and MaxCount (1e15), so no sum over a series
// overflows and reports never hold non-finite numbers. Series hold their
// points in ascending time order without duplicates. Either every point of
// a series has a request total or none has; with totals, only intervals
// with requests (total > 0) carry a rate and count toward MinPoints.
//
// Change span: a change happened somewhere in [From, At]: from the end of
// the last interval before the split to the start of the first one after
// it (with totals, intervals with requests only). Without a gap in the
// production data the two are equal (change_at); with one, the change is
// placed only to the gap, and a gap of two steps or more is said in the
// reason.
//
// Windows: a flip first seen in run R on target T has the window
// [start of the last run in which its probe answered the old verdict −
// tolerance, start of R + tolerance] (Flip.LastRunBefore; Flip.BeforeRun
// when that is unknown; else T's last complete run before R): the
// provider changed somewhere between the last run that still saw the old
// verdict and the run that saw the new one, and production is only
// resolved to its interval. The flip is "in the window" of a production
// change when its window meets the change's span; a matching flip
// explains the change (provider) only when its window holds the whole
// span, else the change is inconclusive. Runs count before the change
// when they started before From, after it from At on; runs inside the
// span count on neither side. A revert recorded in run R is treated as a flip
// in the opposite direction whose earliest start is confirm_runs runs of T
// before R. Withdrawn flips (Flip.Withdrawn: the probe was marked
// nondeterministic) count for nothing; a flip whose probe moved on
// (Flip.MovedOn) counts for its own window, and its leaving is no revert.
// The tolerance defaults to twice the series' step (the
// Prometheus --step, or the median spacing of the series' JSONL points; 2h
// when a series has a single point).
//
// Direction: production "up" (more blocking) matches flips that made the
// target stricter — a probe went from not blocked to blocked (diff's
// "tightened"), or, for a specific category, a blocked probe gained that
// category (part of "recategorized"); "down" matches the converse
// ("loosened"). A "mixed" event matches through those of its flips that go
// the production's way. score_drift events (scores moved on identical bytes
// without a verdict flip) count with the direction of the production
// category's own scores where the flip carries it (Flip.ScoreDirs; for the
// empty category, the direction all its categories share), else with the
// event's direction; scores that moved in no single direction (a "mixed"
// score drift) match neither way and make the change inconclusive, naming
// the event. nondeterminism events are never evidence of a change (they
// only stop a traffic claim, see "Held still").
//
// Nothing here reads the database or the network except Prometheus.Load,
// LoadVerdicts and AttributeStore (through the VerdictStore the caller
// passes; AttributeStore reads the per-run verdicts only for a change
// that reaches the held-still check, so a report without one reads
// none): the caller builds a History (internal/app does, from the store
// and the corpus), so every rule is testable with plain values.
package attribution
