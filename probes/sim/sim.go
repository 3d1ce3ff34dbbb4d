// Package sim is driftprobe's embedded provider simulator: a real HTTP
// server that speaks the OpenAI chat-completions wire format with Azure's
// content-filter dialect, and the Prober that talks to it.
//
// Its per-category scores are a deterministic function of the request bytes
// (a small lexicon classifier plus a jitter derived from the body's SHA-256).
// A policy version is a set of per-category thresholds and a model
// fingerprint; a config scripts policy versions to take effect from a given
// run id, which is how tests and the demo make "the provider" change. A
// score at or above its threshold blocks: at the input stage (HTTP 400
// content_filter with per-category results) when it clears the threshold by
// InputMargin, otherwise at the output stage (finish_reason content_filter),
// or, for jailbreak-only blocks, as a plain-text model refusal. Near a
// threshold, optional noise flips decisions at random (seeded by run and
// bytes, so a given run is reproducible). Scripted 429s and 5xx exercise the
// runner's retry and breaker paths.
package sim

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Policy is one policy version of the simulated provider.
type Policy struct {
	FromRun     int64              `yaml:"from_run" json:"from_run"`
	Thresholds  map[string]float64 `yaml:"thresholds" json:"thresholds"`
	Fingerprint string             `yaml:"fingerprint,omitempty" json:"fingerprint,omitempty"`
	Model       string             `yaml:"model,omitempty" json:"model,omitempty"` // reported (dated) model id
	// ScoreShift moves a category's scores (a classifier update): scores on
	// identical bytes change, verdicts only where a threshold is crossed.
	ScoreShift map[string]float64 `yaml:"score_shift,omitempty" json:"score_shift,omitempty"`
}

// Config is the `sim:` block of a sim target.
type Config struct {
	Noise       float64  `yaml:"noise"`        // chance that a decision near a threshold flips
	NoiseBand   float64  `yaml:"noise_band"`   // "near": |score - threshold| < band (default 0.12)
	InputMargin float64  `yaml:"input_margin"` // block at input when score >= threshold + margin (default 0.3)
	Policies    []Policy `yaml:"policies"`
	ErrorStatus int      `yaml:"error_status"` // status for scripted failures (429, 500, 502, 503, 529)
	ErrorRate   float64  `yaml:"error_rate"`   // chance that an attempt fails with ErrorStatus
	FailFirst   int      `yaml:"fail_first"`   // the first N attempts of each request in a run fail
	RetryAfter  float64  `yaml:"retry_after"`  // seconds sent in Retry-After on scripted failures
	AbuseFrom   int64    `yaml:"abuse_from_run"`
	Seed        int64    `yaml:"seed"`
	// Latency is how long each answer waits before it is written: a
	// provider's response time, for benchmarks and demos at realistic
	// speed (0: at once; at most MaxLatency). A client that gives up
	// first gets nothing.
	Latency time.Duration `yaml:"latency"`
}

// MaxRetryAfter bounds Config.RetryAfter (seconds): a Retry-After header
// is a small whole number of seconds, never a 300-digit one.
const MaxRetryAfter = 86400

// MaxLatency bounds Config.Latency.
const MaxLatency = time.Minute

// DefaultThreshold applies to every category a policy does not name.
const DefaultThreshold = 0.5

// DefaultFingerprint is reported when no policy names one.
const DefaultFingerprint = "fp_sim_2026a"

// Validate checks c and returns problems as (field, message) pairs relative
// to the sim block.
func (c *Config) Validate() [][2]string {
	var errs [][2]string
	add := func(f, format string, a ...any) { errs = append(errs, [2]string{f, fmt.Sprintf(format, a...)}) }
	// Probabilities: NaN fails every comparison, so !(0 <= x <= 1)
	// refuses it too (x < 0 || x > 1 would let it through).
	if !(c.Noise >= 0 && c.Noise <= 1) {
		add("noise", "%v: must be between 0 and 1", c.Noise)
	}
	if !(c.ErrorRate >= 0 && c.ErrorRate <= 1) {
		add("error_rate", "%v: must be between 0 and 1", c.ErrorRate)
	}
	if c.ErrorStatus != 0 && (c.ErrorStatus < 400 || c.ErrorStatus > 599) {
		add("error_status", "%d: must be an HTTP error status", c.ErrorStatus)
	}
	if (c.ErrorRate > 0 || c.FailFirst > 0) && c.ErrorStatus == 0 {
		add("error_status", "required when error_rate or fail_first is set")
	}
	// NaN fails every comparison: !(x >= 0) refuses it too.
	for _, f := range []struct {
		name string
		v    float64
	}{{"noise_band", c.NoiseBand}, {"input_margin", c.InputMargin}, {"retry_after", c.RetryAfter}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			add(f.name, "%v: must be a number at least 0", f.v)
		}
	}
	if c.RetryAfter > MaxRetryAfter && !math.IsInf(c.RetryAfter, 1) {
		add("retry_after", "%v: must be at most %d (seconds: a day)", c.RetryAfter, MaxRetryAfter)
	}
	if c.FailFirst < 0 {
		add("fail_first", "%d: must be at least 0", c.FailFirst)
	}
	if c.Latency < 0 || c.Latency > MaxLatency {
		add("latency", "%s: must be between 0 and %s", c.Latency, MaxLatency)
	}
	if c.AbuseFrom < 0 {
		add("abuse_from_run", "%d: must be a run id (at least 1), or 0: never", c.AbuseFrom)
	}
	prev := int64(0)
	for i, p := range c.Policies {
		if p.FromRun < 1 {
			add(fmt.Sprintf("policies[%d].from_run", i), "%d: run ids start at 1", p.FromRun)
		}
		if p.FromRun >= 1 && p.FromRun <= prev {
			add(fmt.Sprintf("policies[%d].from_run", i), "%d: policies must be in increasing from_run order", p.FromRun)
		}
		prev = p.FromRun
		keys := make([]string, 0, len(p.Thresholds))
		for k := range p.Thresholds {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := p.Thresholds[k]
			if !known(k) {
				add(fmt.Sprintf("policies[%d].thresholds.%s", i, k), "unknown category (want one of %v)", scoredCategories)
			}
			if v < 0 || math.IsNaN(v) {
				add(fmt.Sprintf("policies[%d].thresholds.%s", i, k), "%v: must be >= 0 (above 1 never blocks)", v)
			}
		}
		shifts := make([]string, 0, len(p.ScoreShift))
		for k := range p.ScoreShift {
			shifts = append(shifts, k)
		}
		sort.Strings(shifts)
		for _, k := range shifts {
			if !known(k) {
				add(fmt.Sprintf("policies[%d].score_shift.%s", i, k), "unknown category (want one of %v)", scoredCategories)
			}
			if v := p.ScoreShift[k]; v < -1 || v > 1 || math.IsNaN(v) {
				add(fmt.Sprintf("policies[%d].score_shift.%s", i, k), "%v: must be between -1 and 1", v)
			}
		}
	}
	return errs
}

func known(cat string) bool {
	for _, c := range scoredCategories {
		if c == cat {
			return true
		}
	}
	return false
}

// effective is the policy in force at a run: thresholds accumulated over
// every policy whose from_run is <= run (categories not named keep their
// earlier value).
type effective struct {
	shift       map[string]float64
	thresholds  map[string]float64
	fingerprint string
	model       string
}

func (c *Config) at(run int64) effective {
	e := effective{thresholds: map[string]float64{}, shift: map[string]float64{}, fingerprint: DefaultFingerprint}
	for _, cat := range scoredCategories {
		e.thresholds[cat] = DefaultThreshold
	}
	for _, p := range c.Policies {
		if p.FromRun > run {
			break
		}
		for k, v := range p.Thresholds {
			e.thresholds[k] = v
		}
		for k, v := range p.ScoreShift {
			e.shift[k] = v
		}
		if p.Fingerprint != "" {
			e.fingerprint = p.Fingerprint
		}
		if p.Model != "" {
			e.model = p.Model
		}
	}
	return e
}

func (c *Config) noiseBand() float64 {
	if c.NoiseBand > 0 {
		return c.NoiseBand
	}
	return 0.12
}

func (c *Config) inputMargin() float64 {
	if c.InputMargin > 0 {
		return c.InputMargin
	}
	return 0.3
}
