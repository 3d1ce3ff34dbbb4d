// Package metrics defines driftprobe's Prometheus metrics on a caller's
// registry: verdict composition per target and category, events, runs,
// baseline restarts, requests, retries, breakers, tokens, cost and the
// GitHub outbox. Probe ids and texts are never labels.
package metrics

// Metric names exported by driftprobe. Dashboards and alert rules may only
// use these (a test checks every PromQL expression against this list).
const (
	ProbeVerdicts     = "driftprobe_probe_verdicts"             // gauge {target,verdict,category}: a probe counts once per category it fires with (composition; never a share of probes)
	Probes            = "driftprobe_probes"                     // gauge {target,verdict}: probes whose latest verdict is this class, each counted once (block shares)
	CategoryActive    = "driftprobe_category_active"            // gauge {target,category} 0/1
	EventsTotal       = "driftprobe_events_total"               // counter {target,kind,direction}: events as opened, plus one model_change per event a model change turned into one; 0 for every configured target, kind and direction
	EventsOpen        = "driftprobe_events_open"                // gauge {target,kind}
	RunsTotal         = "driftprobe_runs_total"                 // counter {status}: 0 for complete, partial and aborted before the first such run
	LastRunTimestamp  = "driftprobe_last_run_timestamp_seconds" // gauge {status}
	RunDuration       = "driftprobe_run_duration_seconds"       // histogram
	RequestsTotal     = "driftprobe_requests_total"             // counter {target,outcome}
	RetriesTotal      = "driftprobe_retries_total"              // counter {target}
	BreakerOpen       = "driftprobe_breaker_open"               // gauge {target}: process, live during a run (0 between runs)
	BreakerOpenedRuns = "driftprobe_breaker_opened_runs"        // gauge {target}: the target's latest finished runs in a row in which its breaker opened (database)
	TokensTotal       = "driftprobe_tokens_total"               // counter {target,direction}
	CostUSDTotal      = "driftprobe_cost_usd_total"             // counter {target}
	OutboxPending     = "driftprobe_outbox_pending"             // gauge
	AbuseBlocks       = "driftprobe_abuse_blocks"               // gauge {target}: probes answered with account-level enforcement in the last run
	UnknownSignals    = "driftprobe_unknown_signals"            // gauge {target}: latest finished run's answers carrying fields, reasons or categories the classifier does not know
	TargetDegraded    = "driftprobe_target_degraded"            // gauge {target}: 1 when the target's latest finished run (its run not aborted) was degraded
	ConfigReloadOK    = "driftprobe_config_last_reload_successful"
	ConfigReloadTime  = "driftprobe_config_last_reload_success_timestamp_seconds"
	LockSkipsTotal    = "driftprobe_run_lock_skips_total" // counter: scheduled runs skipped because another process held the lock
	RunFailuresTotal  = "driftprobe_run_failures_total"   // counter (serve only): scheduled runs that failed with an error
	BuildInfo         = "driftprobe_build_info"           // gauge {version,goversion}
	ScheduleIntervalS = "driftprobe_schedule_interval_seconds"
	RunOverdue        = "driftprobe_run_overdue_timestamp_seconds" // gauge: when the schedule's second run after the latest run that measured something (finished, some target answered with a verdict) should have ended
	DatabaseSize      = "driftprobe_database_size_bytes"           // gauge: the SQLite file (pages in use and free)
	DatabaseFree      = "driftprobe_database_free_bytes"           // gauge: free pages, reused by later writes (VACUUM returns them)

	// Continuous attribution (the config's attribution block), from the
	// latest stored report.
	ProductionChanges    = "driftprobe_production_changes"            // gauge {target,category,direction,attribution}: changes in the latest successful report ("all" for every block)
	UncoveredCategories  = "driftprobe_uncovered_categories"          // gauge {target,category} 1: production blocks it, no corpus probe is tagged with it
	AttributionTimestamp = "driftprobe_attribution_timestamp_seconds" // gauge: time of the latest successful report
	AttributionSuccess   = "driftprobe_attribution_success"           // gauge 1/0: whether the latest attempt succeeded

	// Database-backed, so they mean the same in every deployment: a
	// one-shot run (textfile, Pushgateway) exports what every run so far
	// recorded, not only its own process's counts.
	LastEventTimestamp  = "driftprobe_last_event_timestamp_seconds"  // gauge {target,kind,direction}: when the latest event (as opened) was recorded on the target
	LastRunProbes       = "driftprobe_last_run_probes"               // gauge {target,outcome}: the target's latest finished run's answers by outcome
	RecordedProbes      = "driftprobe_recorded_probes_total"         // counter {target,outcome}: answers recorded by every run
	RecordedRequests    = "driftprobe_recorded_requests_total"       // counter {target}: request attempts recorded by every run
	RecordedRetries     = "driftprobe_recorded_retries_total"        // counter {target}
	RecordedTokens      = "driftprobe_recorded_tokens_total"         // counter {target,direction}
	RecordedCostUSD     = "driftprobe_recorded_cost_usd_total"       // counter {target}
	RecordedRunDuration = "driftprobe_recorded_run_duration_seconds" // histogram: wall time of every finished run
	PreviousRunProbes   = "driftprobe_previous_run_probes"           // gauge {target,outcome}: the finished run before the target's latest finished run

	// NewCategoryTimestamp is what DriftprobeNewCategoryActive pages on: a
	// composition change seen as confirmed flips on identical bytes (an
	// event's new_categories), never a baseline confirming late.
	NewCategoryTimestamp = "driftprobe_new_category_timestamp_seconds" // gauge {target,category}: when the event that introduced the category on the target was recorded there

	// Input changes: probes whose answers stopped being comparable with
	// their baselines (detection's input_changes rows), so their baselines
	// restarted, by cause (InputChangeCauses). A provider change at the
	// same moment is absorbed into the new baselines: what
	// DriftprobeBaselinesRestarted tickets on, gap-proof like the event
	// timestamps.
	InputChangeTimestamp = "driftprobe_input_change_timestamp_seconds" // gauge {target,cause}: end time of the latest run that recorded input changes of the cause on the target
	InputChangeProbes    = "driftprobe_input_change_probes"            // gauge {target,cause}: probes whose baselines that run restarted for the cause

	// GitHubHoldUntil is the GitHub delivery's wait in force
	// (github_holds, see ghissue): a rate limit or an outage recorded "no
	// request to GitHub before T", and every pending outbox row waits for
	// T. Absent when no wait is in force.
	GitHubHoldUntil = "driftprobe_github_hold_until_timestamp_seconds" // gauge {api,scope}: when the latest wait in force of the scope on that GitHub API origin ends

	// DetectionStateDamaged is a target whose detection state
	// (probe_states row) does not decode: its detection stops (each run
	// reports it failed) and it is left out of the state-derived series
	// (verdicts, probes, active categories); the other targets' are
	// exported as usual. Absent otherwise.
	DetectionStateDamaged = "driftprobe_detection_state_damaged" // gauge {target} 1: the target's probe_states row does not decode (db check names it and the DELETE)

	// ParkedStateDamaged counts, per target, the states it parked at
	// endpoints it left (parked_states rows) that do not decode: its
	// detection at its current endpoint goes on (its series are exported),
	// but a return to such an endpoint fails its detection, and retention
	// keeps every observation of the target meanwhile. Not
	// DetectionStateDamaged, whose 1 means the target's detection has
	// stopped. Absent otherwise.
	ParkedStateDamaged = "driftprobe_parked_state_damaged" // gauge {target}: how many of the target's parked_states rows do not decode (db check names each and its DELETE)
)

// Scopes of driftprobe_github_hold_until_timestamp_seconds: what a
// github_holds row keys on besides the API origin, as ghissue.Hold.Scope
// names it (keep in sync). The credential itself (a token's variable, an
// App installation) is never a label: driftprobe outbox names it.
const (
	HoldScopeHost       = "host"       // an outage (5xx, timeouts, GitHub unreachable): every credential on the host waits
	HoldScopeCredential = "credential" // a primary or secondary rate limit of the credential that called
)

// Causes of driftprobe_input_change_timestamp_seconds and
// driftprobe_input_change_probes: input_changes.cause as detection
// (diff/detect.go) records it; keep in sync. Rows of any other value are
// not exported.
const (
	InputCauseRequest = "request" // the probe's request bytes changed: a target parameter, the corpus, the adapter (also every row recorded before schema 15)
	InputCauseOrigin  = "origin"  // the target moved to another endpoint (base_url, region, gateway) or account (OpenAI organization, project) with no state parked there to resume
	InputCauseState   = "state"   // the target's detection state was missing though earlier runs had established it (its probe_states row, or the parked_states row of the endpoint it returned to, removed or lost): every probe's baseline restarts
)

// Outcomes of driftprobe_last_run_probes, driftprobe_previous_run_probes and
// driftprobe_recorded_probes_total:
// how a probe's first sample was answered.
const (
	OutcomeVerdict     = "verdict"            // allowed, blocked_*, model_refusal, abuse_block
	OutcomeTransient   = "transient"          // 429, 5xx, timeouts, breaker open (after retries)
	OutcomeClientError = "client_error"       // 400 not a filter, 401, 404, render errors
	OutcomeUnavailable = "filter_unavailable" // the provider's filter did not run
)

// Exported lists every metric family name driftprobe exports (histograms
// also export _bucket, _sum and _count series).
var Exported = []string{
	ProbeVerdicts, CategoryActive, EventsTotal, EventsOpen, RunsTotal, LastRunTimestamp, RunDuration,
	RequestsTotal, RetriesTotal, BreakerOpen, TokensTotal, CostUSDTotal, OutboxPending, AbuseBlocks,
	TargetDegraded, ConfigReloadOK, ConfigReloadTime, LockSkipsTotal, BuildInfo, ScheduleIntervalS,
	DatabaseSize, DatabaseFree, ProductionChanges, UncoveredCategories, AttributionTimestamp, AttributionSuccess,
	LastEventTimestamp, LastRunProbes, RecordedProbes, RecordedRequests, RecordedRetries, RecordedTokens, RecordedCostUSD,
	RecordedRunDuration, PreviousRunProbes, NewCategoryTimestamp, RunOverdue,
	Probes, BreakerOpenedRuns, RunFailuresTotal, UnknownSignals, InputChangeTimestamp, InputChangeProbes,
	GitHubHoldUntil, DetectionStateDamaged, ParkedStateDamaged,
}

// BreakerRunsCap is the most consecutive runs driftprobe_breaker_opened_runs
// counts: a scrape reads at most this many runs back.
const BreakerRunsCap = 24

// SubsetRunNote is the note of a run of only some of the configured
// targets (`compare --run`, runs.note). Such a run says nothing about the
// targets it did not run; every other finished run runs every target the
// configuration in force enables, so a finished run without a target
// means the target was disabled or removed then (its latest-run series go
// stale until it runs again). Keep in sync with cmd/driftprobe's compare.
const SubsetRunNote = "compare --run"
