// Package config loads and validates driftprobe's YAML configuration.
//
// Loading goes Default(), then Parse (strict YAML: unknown fields and wrong
// types are errors), then Validate. Every problem is reported as
// "FILE:LINE: FIELD: what is wrong" (see internal/yamlx) so a user can jump
// to it; Load reports every problem of the file at once, the decoder's
// with validation's, in file order (see internal/problems). Secrets are
// never in the file: a target names the environment variable holding its
// key, and Resolve reads it.
package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/internal/problems"
	"github.com/driftprobe/driftprobe/internal/yamlx"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/sim"
	"github.com/driftprobe/driftprobe/probes/wire"
	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"
)

// Config is the whole configuration file.
type Config struct {
	Database    string    `yaml:"database"`
	Corpus      string    `yaml:"corpus"`
	Schedule    string    `yaml:"schedule"`
	Jitter      Duration  `yaml:"jitter"`
	ConfirmRuns int       `yaml:"confirm_runs"`
	Concurrency int       `yaml:"concurrency"`    // requests in flight across all targets
	Timeout     Duration  `yaml:"timeout"`        // per-request default
	MaxAttempts int       `yaml:"max_attempts"`   // per-request default
	MaxBody     int       `yaml:"max_body_bytes"` // response bytes kept as evidence
	LockTTL     Duration  `yaml:"lock_ttl"`       // run lease; renewed while a run is alive
	Detection   Detection `yaml:"detection"`
	Retention   Retention `yaml:"retention"`
	Targets     []*Target `yaml:"targets"`
	GitHub      *GitHub   `yaml:"github"`
	// Attribution, when set, makes every run attribute production
	// block-rate changes from Prometheus after it (and is what
	// `driftprobe attribute` reads without a source flag).
	Attribution *Attribution `yaml:"attribution"`

	File string     `yaml:"-"` // source file; "" for the built-in default
	root *yaml.Node `yaml:"-"`
	// dbFlag: Database was replaced by a --db flag (LoadWithDatabase), so
	// the file's database is never opened and not checked against the host.
	dbFlag bool
}

// Retention says how long runs' observations are kept; zero keeps them
// forever. Evidence of events, detection baselines and each target's
// latest complete run are kept whatever their age. After every run (and
// with `driftprobe db prune`) older observations are pruned.
type Retention struct {
	// Bodies: observations older than this lose their stored request and
	// response bodies; verdicts, categories, signals and hashes stay.
	Bodies Duration `yaml:"bodies"`
	// Observations: observations older than this are deleted.
	Observations Duration `yaml:"observations"`
}

// Enabled reports whether anything is ever pruned.
func (r Retention) Enabled() bool { return r.Bodies > 0 || r.Observations > 0 }

// Detection tunes flip detection.
type Detection struct {
	// DegradedFraction: a target whose share of transient/unavailable
	// outcomes in a run exceeds this confirms nothing (default 0.2).
	DegradedFraction float64 `yaml:"degraded_fraction"`
	// ScoreTolerance: score moves on identical bytes beyond this without a
	// verdict flip are score drift (default 0.15).
	ScoreTolerance float64 `yaml:"score_tolerance"`
	// NondeterministicFlips: reverted candidates after which a probe is
	// marked nondeterministic (default 2).
	NondeterministicFlips int `yaml:"nondeterministic_flips"`
	// WindowRuns: confirmed flips on one target within this many runs of an
	// open event join it (default 3).
	WindowRuns int `yaml:"window_runs"`
	// ScreenSamples: extra samples of the identical bytes taken when a
	// probe's verdict differs from its baseline, and while a baseline is
	// being established, to tell noise from change (default 2: with one,
	// a probe answering at random near a threshold passed as a confirmed
	// change in a third of simulated cases; negative disables). A target's
	// confirm_samples, when larger, wins.
	ScreenSamples int `yaml:"screen_samples"`
}

// Attribution configures continuous attribution: the Prometheus range
// query `driftprobe attribute --prometheus` takes, read after every run.
// Validate guarantees, when the block is present: Prometheus is an http(s)
// URL with a host, Query is not blank, TargetLabel and CategoryLabel are
// distinct label names, Step is at least 1s, Since spans at least
// 2 × AttributionMinPoints steps (a change needs that many points,
// half on each side) and at most AttributionMaxSteps steps,
// Tolerance is positive or absent (0: twice the step), and the detection
// thresholds are finite: MinZ and MinChange positive, MinRateChange at
// least 0, MinPoints at least 2 (with Since then spanning 2 × MinPoints
// steps). Absent thresholds take package attribution's defaults, which
// the Default* constants below mirror.
type Attribution struct {
	Prometheus    string   `yaml:"prometheus"`     // API root, e.g. http://prometheus:9090
	Query         string   `yaml:"query"`          // blocked requests per step by target and category
	TotalQuery    string   `yaml:"total_query"`    // optional: requests per step by target (the rate test)
	TargetLabel   string   `yaml:"target_label"`   // default "target"
	CategoryLabel string   `yaml:"category_label"` // default "category"
	Since         Duration `yaml:"since"`          // default 7d
	Step          Duration `yaml:"step"`           // default 1h
	Tolerance     Duration `yaml:"tolerance"`      // optional; 0: twice the step

	// Detection thresholds, as attribute's --min-z, --min-points,
	// --min-change and --min-rate-change.
	MinZ          float64 `yaml:"min_z"`           // |z| and Welch t a change needs; default 3
	MinPoints     int     `yaml:"min_points"`      // points on each side; default 3
	MinChange     float64 `yaml:"min_change"`      // without totals, relative change of the mean; default 0.5
	MinRateChange float64 `yaml:"min_rate_change"` // with totals, relative rate change also needed; default 0 (off)
}

// Attribution defaults.
const (
	DefaultAttributionSince = 7 * 24 * time.Hour
	DefaultAttributionStep  = time.Hour
)

// Price is a target's token price table in USD per million tokens.
type Price struct {
	InputPerMTok  float64 `yaml:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok"`
}

// Breaker tunes a target's circuit breaker.
type Breaker struct {
	Failures int      `yaml:"failures"` // consecutive transient failures that open it (default 5)
	Cooldown Duration `yaml:"cooldown"` // open period before a trial request (default 30s)
}

// Target is one provider + model + endpoint + fixed parameters.
type Target struct {
	Name           string            `yaml:"name"`
	Provider       string            `yaml:"provider"`
	Model          string            `yaml:"model"`
	Endpoint       string            `yaml:"endpoint"`
	BaseURL        string            `yaml:"base_url"`
	APIKeyEnv      string            `yaml:"api_key_env"`
	RateLimitRPM   float64           `yaml:"rate_limit_rpm"`
	Concurrency    int               `yaml:"concurrency"`
	Price          Price             `yaml:"price"`
	MaxTokens      int               `yaml:"max_tokens"`
	Temperature    float64           `yaml:"temperature"`
	Seed           *int64            `yaml:"seed"`
	Timeout        Duration          `yaml:"timeout"`
	MaxAttempts    int               `yaml:"max_attempts"`
	ConfirmSamples int               `yaml:"confirm_samples"`
	Breaker        Breaker           `yaml:"breaker"`
	Options        map[string]string `yaml:"options"`
	Sim            *sim.Config       `yaml:"sim"`
	Disabled       bool              `yaml:"disabled"`
}

// EventKinds are the event kinds detection records (diff.Kind*), the
// values github.kinds accepts.
var EventKinds = []string{"policy_change", "model_change", "score_drift", "nondeterminism"}

// GitHub configures issue filing. It authenticates either with a token
// (TokenEnv, default GITHUB_TOKEN) or as a GitHub App installation (AppID,
// InstallationID and PrivateKeyEnv, all three). Secrets are never in the
// file: TokenEnv and PrivateKeyEnv name environment variables.
type GitHub struct {
	Repo           string   `yaml:"repo"`
	TokenEnv       string   `yaml:"token_env"`
	AppID          int64    `yaml:"app_id"`          // GitHub App id (app auth)
	InstallationID int64    `yaml:"installation_id"` // the app's installation on the repository's owner (app auth)
	PrivateKeyEnv  string   `yaml:"private_key_env"` // variable holding the app's PEM private key (app auth)
	BaseURL        string   `yaml:"base_url"`
	Labels         []string `yaml:"labels"`
	CloseOnRevert  bool     `yaml:"close_on_revert"`
	Kinds          []string `yaml:"kinds"` // event kinds that open issues (default: all but nondeterminism)
}

// Duration is a time.Duration written as "30s", "5m".
type Duration time.Duration

// UnmarshalYAML parses a Go duration string. Problems are returned as a
// *yaml.TypeError ("line N: problem") so the decoder keeps collecting the
// file's other problems and yamlx locates the field.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: cannot unmarshal %s into config.Duration", n.Line, n.ShortTag())}}
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q: not a duration (e.g. 30s, 5m, 90d)", n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
}

// ParseDuration parses a Go duration ("90m", "1h30m"), optionally led by
// whole days and weeks as Prometheus writes them ("90d", "2w", "1d12h").
// Durations past 100 years are refused rather than wrapped around.
func ParseDuration(s string) (time.Duration, error) {
	const (
		day   = 24 * time.Hour
		limit = 100 * 365 * day
	)
	in := strings.TrimSpace(s)
	var total time.Duration
	rest := in
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i == len(rest) || (rest[i] != 'd' && rest[i] != 'w') {
			break
		}
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		unit := day
		if rest[i] == 'w' {
			unit = 7 * day
		}
		if err != nil || n > int64(limit/unit) || total+time.Duration(n)*unit > limit {
			return 0, fmt.Errorf("%q: longer than 100 years", s)
		}
		total += time.Duration(n) * unit
		rest = rest[i+1:]
	}
	if rest == "" {
		if in == "" {
			return 0, errors.New("empty duration")
		}
		return total, nil
	}
	if rest != in && (rest[0] == '-' || rest[0] == '+') {
		return 0, fmt.Errorf("%q: not a duration", s)
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, err
	}
	if total > 0 && (d < 0 || total+d > limit) {
		return 0, fmt.Errorf("%q: not a duration", s)
	}
	if d > limit || d < -limit {
		return 0, fmt.Errorf("%q: longer than 100 years", s)
	}
	return total + d, nil
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Defaults.
const (
	DefaultDatabase    = "driftprobe.db"
	DefaultSchedule    = "@every 1h"
	DefaultConfirmRuns = 2
	DefaultConcurrency = 16
	DefaultTimeout     = 30 * time.Second
	DefaultMaxAttempts = 3
	DefaultMaxBody     = 64 << 10
	DefaultMaxTokens   = 64
	DefaultLockTTL     = 10 * time.Minute
)

// Default returns the built-in configuration used when no file is given:
// the embedded corpus against one embedded simulator target.
func Default() *Config {
	c := &Config{Targets: []*Target{{Name: "sim-a", Provider: "sim", Model: "sim-large", Sim: &sim.Config{}}}}
	c.applyDefaults()
	return c
}

// Load reads and validates the file at path. needKeys makes a missing key
// environment variable an error (commands that send requests need keys;
// commands that read the database do not). Every problem of the file is
// reported at once, in file order (see internal/problems): the decoder's
// (an unknown field, a value of the wrong type), the empty entries and
// validation's, at most problems.Max of them; a problem after which the
// document cannot be read (a syntax error) is reported alone.
func Load(path string, needKeys bool) (*Config, error) {
	return LoadWithDatabase(path, "", needKeys)
}

// LoadWithDatabase is Load, with database (a --db flag), when not empty,
// replacing the file's database: the file's value is then never opened, so
// the host check of it (an existing directory named as the database) is
// left out; it is still validated as written otherwise (`database: ""` is
// refused). The caller checks database itself when it opens it.
func LoadWithDatabase(path, database string, needKeys bool) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &yamlx.Error{File: path, Msg: fmt.Sprintf("cannot read config: %v", errors.Unwrap(err))}
	}
	c, decoded, err := decode(path, data)
	if err != nil {
		return nil, err
	}
	c.dbFlag = database != ""
	if err := c.validate(needKeys, decoded); err != nil {
		return nil, err
	}
	if c.dbFlag {
		c.Database = database
	}
	return c, nil
}

// Parse decodes data strictly and applies defaults, without validating.
// Its problems (the decoder's and the empty entries) are reported
// together, in file order.
func Parse(file string, data []byte) (*Config, error) {
	c, decoded, err := decode(file, data)
	if err != nil {
		return nil, err
	}
	if len(decoded) > 0 {
		return nil, problems.Cap(problems.Combine(c.root, decoded, nil, nil))
	}
	return c, nil
}

// decode decodes data strictly and applies defaults. err is a problem
// after which the document cannot be read (problems.Readable), reported
// alone; otherwise decoded holds the decoder's problems and the empty
// entries (see emptyEntries), and c every value that could be read, for
// validation: when decoded is not empty, the lists the decoder drops
// items of are read again, each item at the index it is written at
// (reread). c is refused then, whatever validation says.
func decode(file string, data []byte) (c *Config, decoded yamlx.List, err error) {
	c = &Config{}
	root, err := yamlx.Decode(file, data, c)
	var l yamlx.List
	if errors.As(err, &l) {
		for _, e := range l {
			if e.File == "" {
				e.File = file
			}
		}
	}
	decoded, ok := problems.Readable(err)
	if !ok {
		return nil, nil, err
	}
	decoded = append(decoded, emptyEntries(file, root)...)
	if len(decoded) > 0 {
		c.reread(root)
	}
	c.File, c.root = file, root
	c.applyDefaults()
	return c, decoded, nil
}

// reread reads again, one item at a time (problems.Items), the lists the
// decoder drops an unreadable or empty item of, so that every item keeps
// the index it is written at and the problems of the items after it name
// their own: targets, each target's sim policies, github's labels and
// kinds. An item that cannot be read is left empty (a zero target), an
// empty one nil (a target) or zero; its problem is the decoder's, or
// emptyEntries'.
func (c *Config) reread(root *yaml.Node) {
	if l, ok := problems.Items[*Target](root, "targets"); ok {
		c.Targets = l
	}
	for i, t := range c.Targets {
		if t == nil || t.Sim == nil {
			continue
		}
		if l, ok := problems.Items[sim.Policy](root, fmt.Sprintf("targets[%d].sim.policies", i)); ok {
			t.Sim.Policies = l
		}
	}
	if g := c.GitHub; g != nil {
		if l, ok := problems.Items[string](root, "github.labels"); ok {
			g.Labels = l
		}
		if l, ok := problems.Items[string](root, "github.kinds"); ok {
			g.Kinds = l
		}
	}
}

// emptyEntries returns the empty entries of the document: list items
// written `- ` or `~`, and values of the free-form mappings (options,
// thresholds, score_shift) left empty. The decoder would drop a list's
// empty item (shifting every later index, so later problems would name
// the wrong entry), keep a target's as nil, and read a threshold's as 0:
// their values are not read (problems.Combine).
func emptyEntries(file string, root *yaml.Node) yamlx.List {
	col := &yamlx.Collector{File: file, Root: root}
	if len(root.Content) > 0 {
		walkEmpty(root.Content[0], "", col.Add)
	}
	return col.List
}

// walkEmpty calls add for every empty entry under n, whose dotted path is
// path, with the problem.
func walkEmpty(n *yaml.Node, path string, add func(path, format string, a ...any)) {
	field := path[strings.LastIndexByte(path, '.')+1:] // the list's or mapping's own key
	switch n.Kind {
	case yaml.SequenceNode:
		field, _, _ = strings.Cut(field, "[")
		for i, item := range n.Content {
			at := fmt.Sprintf("%s[%d]", path, i)
			if !yamlx.IsNull(item) {
				walkEmpty(item, at, add)
				continue
			}
			switch {
			case path == "targets":
				add(at, "empty entry: a target needs at least name, provider and model")
			case field == "policies":
				add(at, "empty entry: a policy needs from_run and thresholds")
			case path == "github.kinds":
				add(at, "empty entry: want one of %s", strings.Join(EventKinds, ", "))
			case path == "github.labels":
				add(at, "empty entry: a GitHub label is 1–50 characters, no comma")
			default:
				add(at, "empty entry: give a value or remove the line")
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if yamlx.IsMerge(k) {
				// The keys a merge key (`<<`) supplies are the mapping's
				// own; a merged alias's mapping is walked where its
				// anchor is.
				for _, m := range yamlx.InlineMerged(v) {
					walkEmpty(m, path, add)
				}
				continue
			}
			at := k.Value
			if path != "" {
				at = path + "." + k.Value
			}
			if !yamlx.IsNull(v) {
				walkEmpty(v, at, add)
				continue
			}
			switch field {
			case "thresholds":
				add(at, "empty: give a threshold from 0 to 1 (above 1 never blocks), or remove the line")
			case "score_shift":
				add(at, "empty: give a shift from -1 to 1, or remove the line")
			case "options":
				add(at, "empty: give the option's value, or remove the line")
			}
		}
	}
}

func (c *Config) applyDefaults() {
	// A number the file leaves out takes its default; one the file sets
	// to 0 is kept, for Validate to refuse (or accept, where 0 has a
	// documented meaning) rather than silently read as the default. So is
	// a string set to "" (see emptyStrings). A field given as null (`~`,
	// `null`, nothing after the colon) is left out, as everywhere: it
	// takes its default too. A key supplied by a merge key (`<<`) is as
	// given as one written in place.
	unset := func(path string) bool { return !yamlx.Given(c.root, path) }
	if c.Database == "" && unset("database") {
		c.Database = DefaultDatabase
	}
	if c.Schedule == "" && unset("schedule") {
		c.Schedule = DefaultSchedule
	}
	if c.ConfirmRuns == 0 && unset("confirm_runs") {
		c.ConfirmRuns = DefaultConfirmRuns
	}
	if c.Concurrency == 0 && unset("concurrency") {
		c.Concurrency = DefaultConcurrency
	}
	if c.Timeout == 0 && unset("timeout") {
		c.Timeout = Duration(DefaultTimeout)
	}
	if c.MaxAttempts == 0 && unset("max_attempts") {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MaxBody == 0 && unset("max_body_bytes") {
		c.MaxBody = DefaultMaxBody
	}
	if c.LockTTL == 0 && unset("lock_ttl") {
		c.LockTTL = Duration(DefaultLockTTL)
	}
	d := &c.Detection
	if d.DegradedFraction == 0 && unset("detection.degraded_fraction") {
		d.DegradedFraction = 0.2
	}
	if d.ScoreTolerance == 0 && unset("detection.score_tolerance") {
		d.ScoreTolerance = 0.15
	}
	if d.NondeterministicFlips == 0 && unset("detection.nondeterministic_flips") {
		d.NondeterministicFlips = 2
	}
	if d.WindowRuns == 0 && unset("detection.window_runs") {
		d.WindowRuns = 3
	}
	if d.ScreenSamples == 0 && unset("detection.screen_samples") {
		d.ScreenSamples = 2
	}
	for i, t := range c.Targets {
		if t == nil {
			continue
		}
		at := fmt.Sprintf("targets[%d].", i)
		if t.Endpoint == "" && unset(at+"endpoint") {
			t.Endpoint = "chat"
		}
		if t.Concurrency == 0 && unset(at+"concurrency") {
			t.Concurrency = 4
		}
		if t.Timeout == 0 && unset(at+"timeout") {
			t.Timeout = c.Timeout
		}
		if t.MaxAttempts == 0 && unset(at+"max_attempts") {
			t.MaxAttempts = c.MaxAttempts
		}
		if t.MaxTokens == 0 && unset(at+"max_tokens") {
			t.MaxTokens = DefaultMaxTokens
		}
		if t.Breaker.Failures == 0 && unset(at+"breaker.failures") {
			t.Breaker.Failures = 5
		}
		if t.Breaker.Cooldown == 0 && unset(at+"breaker.cooldown") {
			t.Breaker.Cooldown = Duration(30 * time.Second)
		}
		if info, ok := probes.Lookup(t.Provider); ok && t.APIKeyEnv == "" && info.NeedsKey && unset(at+"api_key_env") {
			t.APIKeyEnv = info.KeyEnv
		}
	}
	if a := c.Attribution; a != nil {
		if a.TargetLabel == "" && unset("attribution.target_label") {
			a.TargetLabel = "target"
		}
		if a.CategoryLabel == "" && unset("attribution.category_label") {
			a.CategoryLabel = "category"
		}
		// As for confirm_runs: an explicit 0 is an error, not the default.
		if a.Since == 0 && unset("attribution.since") {
			a.Since = Duration(DefaultAttributionSince)
		}
		if a.Step == 0 && unset("attribution.step") {
			a.Step = Duration(DefaultAttributionStep)
		}
		if a.MinZ == 0 && unset("attribution.min_z") {
			a.MinZ = DefaultAttributionMinZ
		}
		if a.MinPoints == 0 && unset("attribution.min_points") {
			a.MinPoints = AttributionMinPoints
		}
		if a.MinChange == 0 && unset("attribution.min_change") {
			a.MinChange = DefaultAttributionMinChange
		}
	}
	if c.GitHub != nil && c.GitHub.TokenEnv == "" && !c.GitHub.AppAuth() && unset("github.token_env") {
		c.GitHub.TokenEnv = "GITHUB_TOKEN"
	}
}

// emptyStrings reports the string fields the file sets to "", where only
// null is the same as leaving a field out: each has a default (or, for
// base_url, the provider's API root) that "" would otherwise silently
// stand for. It returns the fields reported. A target's api_key_env is
// reported only for a provider with a default key variable: for the
// others (openai_compatible, bedrock, sim) no api_key_env, "" included,
// means no key.
func (c *Config) emptyStrings(col *yamlx.Collector) map[string]bool {
	said := map[string]bool{}
	if c.root == nil {
		return said
	}
	check := func(path, v, def string) {
		if v == "" && givenEmpty(c.root, path) {
			col.Add(path, `"": must not be empty (omit the field for %s)`, def)
			said[path] = true
		}
	}
	check("database", c.Database, fmt.Sprintf("its default %s", DefaultDatabase))
	check("corpus", c.Corpus, "the embedded default corpus")
	check("schedule", c.Schedule, fmt.Sprintf("its default %q", DefaultSchedule))
	for i, t := range c.Targets {
		if t == nil {
			continue
		}
		at := fmt.Sprintf("targets[%d].", i)
		check(at+"endpoint", t.Endpoint, "its default chat")
		if info, ok := probes.Lookup(t.Provider); ok && info.NeedsKey && info.KeyEnv != "" {
			check(at+"api_key_env", t.APIKeyEnv, "its default "+info.KeyEnv)
		}
		// base_url: see Validate, after the provider's own checks (a
		// provider requiring it says so).
	}
	if g := c.GitHub; g != nil {
		def := "its default GITHUB_TOKEN"
		if g.AppAuth() {
			def = "GitHub App auth"
		}
		check("github.token_env", g.TokenEnv, def)
		check("github.base_url", g.BaseURL, "github.com's API")
	}
	if a := c.Attribution; a != nil {
		check("attribution.target_label", a.TargetLabel, "its default target")
		check("attribution.category_label", a.CategoryLabel, "its default category")
	}
	return said
}

// givenEmpty reports whether the file gives path as an empty string (not
// null, not left out): the file's own value, so a field a caller cleared
// after parsing (Validate again) is not blamed on the file.
func givenEmpty(root *yaml.Node, path string) bool {
	n := yamlx.Find(root, path)
	return n != nil && !yamlx.IsNull(n) && n.Kind == yaml.ScalarNode && n.Value == ""
}

// Validate checks everything Parse cannot: values, references, names and,
// with needKeys, that every key variable is set. Its problems are
// reported in file order, at most problems.Max of them.
func (c *Config) Validate(needKeys bool) error {
	return c.validate(needKeys, nil)
}

// validate is Validate, with the problems decode found (decoded): they
// are reported with validation's, which leaves out what it would say of
// a value the decoder did not read (problems.Combine).
func (c *Config) validate(needKeys bool, decoded yamlx.List) error {
	unread := problems.Unread(decoded)
	col := &yamlx.Collector{File: c.File, Root: c.root}
	if c.File == "" {
		col.File = "(built-in config)"
	}
	empty := c.emptyStrings(col)
	checkInt(col, "confirm_runs", c.ConfirmRuns, 1, math.MaxInt, DefaultConfirmRuns)
	checkInt(col, "concurrency", c.Concurrency, 1, MaxConcurrency, DefaultConcurrency)
	checkDuration(col, "timeout", c.Timeout, MinTimeout, MaxTimeout, DefaultTimeout)
	checkInt(col, "max_attempts", c.MaxAttempts, 1, MaxAttempts, DefaultMaxAttempts)
	checkInt(col, "max_body_bytes", c.MaxBody, MinMaxBody, MaxMaxBody, DefaultMaxBody)
	checkDuration(col, "lock_ttl", c.LockTTL, MinLockTTL, MaxLockTTL, DefaultLockTTL)
	if c.Jitter < 0 {
		col.Add("jitter", "%s: must be positive (or 0: none)", c.Jitter.D())
	} else if rest, ok := strings.CutPrefix(strings.TrimSpace(c.Schedule), "@every "); ok && c.Jitter > 0 {
		// The daemon spreads an @every schedule by ±jitter: a jitter of
		// the whole interval or more would be ignored, not honoured.
		if iv, err := time.ParseDuration(strings.TrimSpace(rest)); err == nil && c.Jitter.D() >= iv {
			col.Add("jitter", "%s: must be shorter than the schedule's interval (%s)", c.Jitter.D(), iv)
		}
	} else if c.Jitter.D() >= time.Minute {
		// A cron schedule's run waits a random part of jitter and runs
		// never overlap: a jitter as long as the shortest gap between two
		// firings pushes a run onto the next firing, which is skipped.
		// (Cron firings are whole minutes apart: a shorter jitter is fine.)
		if sched, err := cron.ParseStandard(strings.TrimSpace(c.Schedule)); err == nil {
			if gap, ok := cronMinGap(sched, c.Jitter.D()); ok && c.Jitter.D() >= gap {
				col.Add("jitter", "%s: must be shorter than the schedule's shortest gap between runs (%s)", c.Jitter.D(), gap)
			}
		}
	}
	if c.Retention.Bodies < 0 {
		col.Add("retention.bodies", "must be positive (or 0: keep forever)")
	}
	if c.Retention.Observations < 0 {
		col.Add("retention.observations", "must be positive (or 0: keep forever)")
	}
	if err := ValidateSchedule(c.Schedule); err != nil && !empty["schedule"] {
		col.Add("schedule", "%v", err)
	}
	// A directory where the database file belongs is refused when a
	// command opens it; say so here, at its line. A path that does not
	// exist yet is fine: run creates it. (Only the file's database: a
	// --db given on the command line replaces it, LoadWithDatabase, and is
	// checked where it is opened.)
	if !c.dbFlag && c.Database != "" && c.Database != ":memory:" && yamlx.Given(c.root, "database") {
		if fi, err := os.Stat(c.Database); err == nil && fi.IsDir() {
			col.Add("database", "%s is a directory, not a database file (name a file, e.g. %s)", c.Database, filepath.Join(c.Database, DefaultDatabase))
		}
	}
	c.Detection.validate(col)
	// An empty list entry (`- ` or `[~]`) decodes to a nil target: it is
	// reported on its own below, and is neither enabled nor disabled.
	nonNil := 0
	for _, t := range c.Targets {
		if t != nil {
			nonNil++
		}
	}
	// A target whose disabled the decoder did not read (`disabled: yes`,
	// or the whole target) may be the enabled one.
	disabledRead := true
	for i := range c.Targets {
		disabledRead = disabledRead && !unread(fmt.Sprintf("targets[%d].disabled", i))
	}
	if len(c.Targets) == 0 {
		col.Add("targets", "at least one target is required")
	} else if nonNil > 0 && len(c.Enabled()) == 0 && disabledRead {
		col.Add("targets", "every target is disabled: at least one must be enabled (a run would probe nothing)")
	}
	names := map[string]int{}
	for i, t := range c.Targets {
		at := fmt.Sprintf("targets[%d]", i)
		if t == nil {
			col.Add(at, "empty entry: a target needs at least name, provider and model")
			continue
		}
		first := len(col.List) // this target's problems start here
		switch {
		case t.Name == "":
			col.Add(at+".name", "required")
		case !validName(t.Name):
			col.Add(at+".name", "%q: use letters, digits, '.', '_' or '-'", t.Name)
		default:
			if j, dup := names[t.Name]; dup {
				col.Add(at+".name", "duplicate target name %q (first at targets[%d])", t.Name, j)
			}
			names[t.Name] = i
		}
		info, ok := probes.Lookup(t.Provider)
		if !ok {
			if t.Provider == "" {
				col.Add(at+".provider", "required")
			} else {
				col.Add(at+".provider", "unknown provider %q (want one of %s)", t.Provider, providerNames())
			}
			continue
		}
		switch {
		case t.Model == "":
			col.Add(at+".model", "required")
		case strings.TrimSpace(t.Model) == "":
			col.Add(at+".model", "%q: blank (give the model, or the Azure deployment name)", t.Model)
		case strings.TrimSpace(t.Model) != t.Model:
			col.Add(at+".model", "%q: leading or trailing white space: it is sent as written, and no provider names a model so", t.Model)
		case !plainText(t.Model):
			col.Add(at+".model", "%+q: control or formatting characters (a tab, a line break, a zero-width space, a bidirectional override) name no model", t.Model)
		}
		if !contains(info.Endpoints, t.Endpoint) && !empty[at+".endpoint"] {
			col.Add(at+".endpoint", "%q: provider %s supports %s", t.Endpoint, t.Provider, strings.Join(info.Endpoints, ", "))
		}
		// Credentials in a base URL would be logged, stored as the
		// target's endpoint and sent in clear on plain http; the URL is
		// not echoed, since it holds them.
		checkBaseURL(col, at+".base_url", t.BaseURL, "api_key_env")
		c.validateTargetNumbers(col, at, t)
		if t.Sim != nil && t.Provider != "sim" {
			col.Add(at+".sim", "only valid for provider sim")
		}
		if t.Sim != nil && t.Provider == "sim" && t.BaseURL != "" {
			// The block configures the embedded simulator only; a
			// standalone one would ignore it without a word.
			col.Add(at+".sim", "the simulator at base_url follows its own --sim-config (driftprobe sim --sim-config FILE); this block applies only to the embedded simulator, without base_url")
		}
		if t.Sim != nil {
			ValidateSim(col, at+".sim.", t.Sim)
		}
		for _, k := range slices.Sorted(maps.Keys(t.Options)) {
			switch {
			case len(info.Options) == 0:
				col.Add(at+".options."+k, "unknown option: provider %s takes no options", t.Provider)
			case !contains(info.Options, k):
				col.Add(at+".options."+k, "unknown option for provider %s (accepted: %s)", t.Provider, strings.Join(info.Options, ", "))
			case !plainText(t.Options[k]):
				// Sent in a header or a URL (an organization, an API
				// version, a region), where a line break fails every
				// request before it leaves.
				col.Add(at+".options."+k, "%+q: control or formatting characters (a tab, a line break, a zero-width space, a bidirectional override) are not allowed", t.Options[k])
			}
		}
		if info.NeedsKey && t.APIKeyEnv == "" && !empty[at+".api_key_env"] {
			col.Add(at+".api_key_env", "required for provider %s", t.Provider)
		}
		// The value is not echoed: it might be the key itself.
		badName := t.APIKeyEnv != "" && (!envName(t.APIKeyEnv) || looksLikeSecret(t.APIKeyEnv))
		if badName {
			col.Add(at+".api_key_env", "must name an environment variable holding the key (letters, digits and '_'), not the key itself")
		}
		if needKeys && t.APIKeyEnv != "" && !t.Disabled && !badName {
			if problem := credentialProblem(t.APIKeyEnv); problem != "" {
				col.Add(at+".api_key_env", "environment variable %s %s", t.APIKeyEnv, problem)
			}
		}
		// A provider reading its own credentials from the environment
		// (Bedrock's SigV4 keys) when no api_key_env is named needs them
		// as much as a key: a problem of the target, located at its
		// provider. Values are never echoed.
		// (An api_key_env the decoder did not read is no sign that none
		// is named.)
		if needKeys && t.APIKeyEnv == "" && !unread(at+".api_key_env") && !t.Disabled && len(info.CredentialEnv) > 0 {
			alt := info.CredentialAlt
			if alt == "" {
				alt = "an API key variable"
			}
			for _, name := range info.CredentialEnv {
				if problem := credentialProblem(name); problem != "" {
					col.Add(at+".provider", "%s signs requests with %s: environment variable %s %s (or name %s in api_key_env)",
						t.Provider, strings.Join(info.CredentialEnv, " and "), name, problem, alt)
				}
			}
		}
		// The provider's own checks overlap the generic ones above (an
		// endpoint it does not serve, a base_url, a temperature range):
		// one message per field, the first.
		said := map[string]bool{}
		for _, e := range col.List[first:] {
			said[e.Field] = true
		}
		for f := range empty {
			said[f] = true
		}
		if info.Check != nil {
			for _, fe := range info.Check(t.ProbeTarget("")) {
				if f := at + "." + fe.Field; !said[f] {
					said[f] = true
					col.Add(f, "%s", fe.Msg)
				}
			}
		}
		// A base_url of "" is refused unless the provider said it is
		// required: omitted, it is the provider's API root.
		if f := at + ".base_url"; t.BaseURL == "" && !said[f] && c.root != nil && givenEmpty(c.root, f) {
			def := "provider " + t.Provider + "'s API root"
			if t.Provider == "sim" {
				def = "the embedded simulator"
			}
			col.Add(f, `"": must not be empty (omit the field for %s)`, def)
		}
	}
	if g := c.GitHub; g != nil {
		if strings.TrimSpace(g.Repo) == "" {
			col.Add("github.repo", "required: the repository issues are filed in, as owner/name")
		} else if parts := strings.Split(g.Repo, "/"); len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			col.Add("github.repo", "%q: want owner/name", g.Repo)
		}
		checkBaseURL(col, "github.base_url", g.BaseURL, "token_env")
		if g.AppAuth() {
			g.validateApp(col)
		}
		for i, k := range g.Kinds {
			if !slices.Contains(EventKinds, k) {
				col.Add(fmt.Sprintf("github.kinds[%d]", i), "%q: want one of %s", k, strings.Join(EventKinds, ", "))
			}
		}
		for i, l := range g.Labels {
			if strings.TrimSpace(l) == "" || utf8.RuneCountInString(l) > 50 || strings.Contains(l, ",") {
				col.Add(fmt.Sprintf("github.labels[%d]", i), "%q: a GitHub label is 1–50 characters, no comma", l)
			}
		}
		// The value is not echoed: it might be the token itself.
		if g.TokenEnv != "" && (!envName(g.TokenEnv) || looksLikeSecret(g.TokenEnv)) {
			col.Add("github.token_env", "must name an environment variable holding the token (letters, digits and '_'), not the token itself")
		}
	}
	if a := c.Attribution; a != nil {
		a.validate(col, yamlx.Given(c.root, "attribution.tolerance"))
	}
	if l := problems.Combine(c.root, decoded, col.List, nil); len(l) > 0 {
		return problems.Cap(l)
	}
	return nil
}

// Bounds of the numeric settings. Validate refuses values outside them,
// and an explicit 0 wherever 0 has no documented meaning (omitting the
// field gives the default; a 0 would otherwise be silently read as it).
const (
	// MaxConcurrency bounds concurrency, globally and per target: each
	// unit is a goroutine and a connection, and no provider serves
	// thousands of parallel probes from one key without rate limiting.
	MaxConcurrency = 1000
	// MinTimeout and MaxTimeout bound a request's timeout: below a second
	// every answer becomes a transient timeout (and opens the breaker);
	// a probe unanswered after ten minutes is an outage, not a verdict,
	// and a longer wait only holds the run on a hung connection.
	MinTimeout = time.Second
	MaxTimeout = 10 * time.Minute
	// MaxAttempts bounds max_attempts: with backoff capped at 30s, ten
	// attempts already wait about 40s per probe on a failing upstream.
	MaxAttempts = 10
	// MinMaxBody and MaxMaxBody bound max_body_bytes, the response bytes
	// stored as evidence (verdicts are read from the whole answer): at
	// least one byte (0 or less would mean no cap at all to the runner),
	// at most 64 MiB, each answer being held in memory while read.
	MinMaxBody = 1
	MaxMaxBody = 64 << 20
	// MinLockTTL and MaxLockTTL bound lock_ttl: the lease is renewed
	// every third of it, and a renewal may wait for SQLite's write lock
	// through its busy timeout (storage.BusyTimeout, 10 s) and fail: with
	// 30 s the two thirds left after a renewal's tick are two busy
	// timeouts, so the next renewal still lands before the lease expires,
	// where a shorter lease would lapse under a live run and let another
	// process in; a crashed run's lease blocks every other run until it
	// expires.
	MinLockTTL = 30 * time.Second
	MaxLockTTL = 24 * time.Hour
	// MaxMaxTokens bounds max_tokens (no model answers more; the plan's
	// token and cost ceilings multiply it by the probe count).
	MaxMaxTokens = 1_000_000
	// MaxSeed bounds seed: Gemini's seed is an int32, and negative seeds
	// mean "random" to several OpenAI-compatible servers (llama.cpp),
	// which would defeat byte-identical, reproducible probes.
	MaxSeed = math.MaxInt32
	// MaxBreakerFailures bounds breaker.failures (the counter is 32-bit;
	// a million consecutive failures is already "never").
	MaxBreakerFailures = 1_000_000
	// MaxSamples bounds confirm_samples and detection.screen_samples:
	// extra requests per differing probe.
	MaxSamples = 10
)

// checkInt adds a problem when v is outside [lo, hi]; def, when > 0, is
// the default named for an explicit 0.
func checkInt(col *yamlx.Collector, path string, v, lo, hi, def int) {
	switch {
	case v == 0 && lo > 0 && def > 0:
		col.Add(path, "0: must be at least %d (omit it for the default %d)", lo, def)
	case v < lo:
		col.Add(path, "%d: must be at least %d", v, lo)
	case v > hi:
		col.Add(path, "%d: must be at most %d", v, hi)
	}
}

// checkDuration adds a problem when v is outside [lo, hi]; def is the
// default named for an explicit 0.
func checkDuration(col *yamlx.Collector, path string, v Duration, lo, hi, def time.Duration) {
	switch {
	case v == 0:
		col.Add(path, "0s: must be at least %s (omit it for the default %s)", lo, def)
	case v.D() < lo:
		col.Add(path, "%s: must be at least %s", v.D(), lo)
	case v.D() > hi:
		col.Add(path, "%s: must be at most %s", v.D(), hi)
	}
}

// checkBaseURL refuses a base URL carrying a credential — user:password@
// or a key pasted into its path — which would be logged, stored as the
// target's endpoint and in every observation's request path, and sent in
// clear on plain http; the URL is not echoed, since it holds one. keyField
// names where the credential belongs. Then, for every provider and
// github.base_url alike, the URL must be what a request path can be
// appended to: an absolute http(s) URL with a host, no query or fragment,
// and a port, when given, from 1 to 65535.
func checkBaseURL(col *yamlx.Collector, path, raw, keyField string) {
	if raw == "" {
		return
	}
	if strings.ContainsFunc(raw, unicode.IsSpace) {
		// Not repeated: it may hold a credential. Left in, the space would
		// be in every request path (a 404 each) or make url.Parse fail.
		col.Add(path, "contains white space (a stray space or newline inside the quotes?): request paths are appended to the base URL (want http(s)://host[:port][/path])")
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		// Not repeated: it may hold a credential.
		col.Add(path, "not a URL (want http(s)://host[:port][/path])")
		return
	}
	if u.User != nil {
		col.Add(path, "must not carry credentials (user:password@host): the key comes from %s", keyField)
		return
	}
	if u.Fragment != "" && keyInPath(u.Fragment) {
		col.Add(path, "must not carry a credential in its fragment: the key comes from %s", keyField)
		return
	}
	// Segments, and the parameters inside them (";key=…", "x-AIza…").
	for _, seg := range strings.FieldsFunc(u.Path, func(r rune) bool { return strings.ContainsRune("/;=,&", r) }) {
		if keyInPath(seg) {
			col.Add(path, "must not carry a credential in its path: the key comes from %s", keyField)
			return
		}
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			if keyInPath(v) || looksLikeSecret(v) {
				col.Add(path, "must not carry a credential in its query (?key=…): the key comes from %s", keyField)
				return
			}
		}
	}
	if !checkScheme(col, path, raw) {
		return
	}
	// Past the checks above, the URL carries no recognisable credential:
	// it is echoed, but for a query or fragment, which might hold one.
	const want = "want http(s)://host[:port][/path]"
	hasQuery := u.RawQuery != "" || u.ForceQuery
	hasFragment := u.Fragment != "" || strings.Contains(raw, "#")
	switch {
	case u.Hostname() == "" && (hasQuery || hasFragment):
		col.Add(path, "no host (%s)", want)
	case u.Hostname() == "":
		col.Add(path, "%q: no host (%s)", raw, want)
	case hasQuery:
		col.Add(path, "must not carry a query (?…): request paths are appended to the base URL (%s)", want)
	case hasFragment:
		col.Add(path, "must not carry a fragment (#…): request paths are appended to the base URL (%s)", want)
	case hostProblem(u, false) != "":
		// The host alone is quoted, unless it looks like a key pasted
		// there.
		if hostSecret(u.Hostname()) {
			col.Add(path, "not a valid host: %s (%s)", hostProblem(u, false), want)
		} else {
			col.Add(path, "host %q: %s (%s)", u.Hostname(), hostProblem(u, true), want)
		}
	case !wire.PortInRange(u.Port()):
		col.Add(path, "%q: port %s out of range (1–65535)", raw, u.Port())
	}
}

// Host name limits (RFC 1035 §2.3.4): bytes per label, and in the whole
// name without its trailing dot.
const (
	maxLabel    = 63
	maxHostName = 253
)

// hostProblem says what makes u's host, which is not empty, no host a
// request can go to, or returns "". A host is an IP literal (IPv4, or IPv6
// in brackets) or a DNS name: dot-separated labels of 1 to 63 ASCII
// letters, digits, hyphens and underscores (internal names use them), not
// starting or ending with a hyphen, at most 253 bytes in all, with one
// trailing dot allowed (localhost., a fully qualified name). A name of
// numbers only must be an IPv4 address. quote allows naming the bad label.
func hostProblem(u *url.URL, quote bool) string {
	h := u.Hostname()
	if strings.HasPrefix(u.Host, "[") {
		if a, err := netip.ParseAddr(h); err != nil || !a.Is6() {
			return "not an IPv6 address (an IPv4 address is written without brackets)"
		}
		return ""
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if !a.Is4() {
			return "an IPv6 address must be written in brackets ([::1])"
		}
		return ""
	}
	name := strings.TrimSuffix(h, ".")
	switch {
	case name == "":
		return "not a host name"
	case len(name) > maxHostName:
		return fmt.Sprintf("longer than %d bytes", maxHostName)
	}
	numeric := true
	for _, label := range strings.Split(name, ".") {
		switch {
		case label == "":
			return "empty label (two dots in a row, or a leading dot)"
		case len(label) > maxLabel:
			return fmt.Sprintf("%s longer than %d bytes", hostLabel(label, quote), maxLabel)
		case label[0] == '-' || label[len(label)-1] == '-':
			return fmt.Sprintf("%s starts or ends with a hyphen", hostLabel(label, quote))
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				if r > 0x7f {
					return fmt.Sprintf("%q: a host name is ASCII letters, digits, '-' and '_' (write an internationalised name in its xn-- form)", r)
				}
				return fmt.Sprintf("%q: a host name is letters, digits, '-' and '_'", r)
			}
			numeric = numeric && r >= '0' && r <= '9'
		}
	}
	if numeric {
		return "not an IPv4 address (a host name of numbers only must be one, without a trailing dot)"
	}
	return ""
}

// hostLabel names a host name's label in a message: quoted, or, when it
// may not be echoed, "a label".
func hostLabel(label string, quote bool) string {
	if quote {
		return fmt.Sprintf("label %q", label)
	}
	return "a label"
}

// hostSecret reports whether a host, or one of its labels, is shaped like
// a credential pasted there: it is not echoed.
func hostSecret(h string) bool {
	if keyInPath(h) || looksLikeSecret(h) {
		return true
	}
	for _, l := range strings.Split(h, ".") {
		if keyInPath(l) || looksLikeSecret(l) {
			return true
		}
	}
	return false
}

// keyInPath reports whether a URL path segment is shaped like an API key:
// a documented credential shape, or an sk- / sk_ key (OpenAI, Anthropic
// and many compatible servers). Hex ids are not refused: gateway URLs
// carry account ids of 32 hex digits.
func keyInPath(seg string) bool {
	for _, re := range secretShapes {
		if re.MatchString(seg) || re.MatchString(strings.TrimLeft(seg, "-_.~")) {
			return true
		}
	}
	if prefixedKey(seg) {
		return true
	}
	return len(seg) >= 20 && (strings.HasPrefix(seg, "sk-") || strings.HasPrefix(seg, "sk_"))
}

// checkScheme adds a problem when raw, if set, is not an http(s) URL, and
// reports whether it is one (or unset). The value is echoed only when it
// carries no user information (it might be a password).
func checkScheme(col *yamlx.Collector, path, raw string) bool {
	if raw == "" || strings.HasPrefix(raw, "http://") || strings.HasPrefix(raw, "https://") {
		return true
	}
	if strings.Contains(raw, "@") {
		col.Add(path, "must start with http:// or https://")
		return false
	}
	col.Add(path, "%q: must start with http:// or https://", raw)
	return false
}

// cronMinGap returns the shortest gap between consecutive firings of
// sched, walked from a fixed reference time, so a file validates the same
// whenever it is checked: five weeks (weekly patterns, a month's end) and
// at least cronMinGaps gaps (a monthly schedule), bounded by
// cronMaxFirings. The window, 5 January to 9 February, holds no
// daylight-saving change in any zone: robfig/cron lists a fall-back's
// repeated 01:30 twice, an hour apart (gocron runs it once), which would
// otherwise refuse any jitter over an hour on a daily schedule. The walk stops early once a gap
// is at most stop; ok is false when sched fires fewer than twice.
func cronMinGap(sched cron.Schedule, stop time.Duration) (gap time.Duration, ok bool) {
	ref := time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)
	prev := sched.Next(ref)
	if prev.IsZero() {
		return 0, false
	}
	for n := 1; n <= cronMaxFirings; n++ {
		next := sched.Next(prev)
		if next.IsZero() {
			break
		}
		if d := next.Sub(prev); !ok || d < gap {
			gap, ok = d, true
		}
		if gap <= stop || n >= cronMinGaps && next.Sub(ref) > cronWalk {
			break
		}
		prev = next
	}
	return gap, ok
}

// Bounds of cronMinGap's walk.
const (
	cronWalk       = 5 * 7 * 24 * time.Hour
	cronMinGaps    = 3
	cronMaxFirings = 10_000 // a week of an every-minute schedule, whose gaps repeat daily
)

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// validate checks the detection block. Each field's 0 is refused when the
// file sets it (omitted, it takes its default).
func (d *Detection) validate(col *yamlx.Collector) {
	// !(x > 0) also refuses NaN.
	if !(d.DegradedFraction > 0 && d.DegradedFraction <= 1) {
		col.Add("detection.degraded_fraction", "%v: must be in (0, 1] (omit it for 0.2)", d.DegradedFraction)
	}
	if !(d.ScoreTolerance > 0) || !finite(d.ScoreTolerance) {
		col.Add("detection.score_tolerance", "%v: must be a positive number (omit it for 0.15)", d.ScoreTolerance)
	}
	if d.NondeterministicFlips < 1 {
		col.Add("detection.nondeterministic_flips", "%d: must be at least 1 (omit it for 2)", d.NondeterministicFlips)
	}
	if d.WindowRuns < 1 {
		col.Add("detection.window_runs", "%d: must be at least 1 (omit it for 3)", d.WindowRuns)
	}
	switch {
	case d.ScreenSamples == 0:
		col.Add("detection.screen_samples", "0: ambiguous: -1 turns screening off; omit it for 2 extra samples")
	case d.ScreenSamples > MaxSamples:
		col.Add("detection.screen_samples", "%d: must be at most %d (-1: off)", d.ScreenSamples, MaxSamples)
	}
}

// validateTargetNumbers checks a target's numeric settings. at is
// "targets[i]". Timeout and max_attempts a target does not set are
// inherited from the top level and reported there only.
func (c *Config) validateTargetNumbers(col *yamlx.Collector, at string, t *Target) {
	set := func(f string) bool { return yamlx.Given(c.root, at+"."+f) }
	if !(t.RateLimitRPM >= 0) || !finite(t.RateLimitRPM) {
		col.Add(at+".rate_limit_rpm", "%v: must be a number >= 0 (0: unlimited)", t.RateLimitRPM)
	}
	checkInt(col, at+".concurrency", t.Concurrency, 1, MaxConcurrency, 4)
	if set("timeout") || t.Timeout != c.Timeout {
		checkDuration(col, at+".timeout", t.Timeout, MinTimeout, MaxTimeout, c.Timeout.D())
	}
	if set("max_attempts") || t.MaxAttempts != c.MaxAttempts {
		checkInt(col, at+".max_attempts", t.MaxAttempts, 1, MaxAttempts, c.MaxAttempts)
	}
	checkInt(col, at+".max_tokens", t.MaxTokens, 1, MaxMaxTokens, DefaultMaxTokens)
	if t.ConfirmSamples < 0 || t.ConfirmSamples > MaxSamples {
		col.Add(at+".confirm_samples", "%d: must be between 0 and %d", t.ConfirmSamples, MaxSamples)
	}
	for _, p := range []struct {
		field string
		v     float64
	}{{"input_per_mtok", t.Price.InputPerMTok}, {"output_per_mtok", t.Price.OutputPerMTok}} {
		if !(p.v >= 0) || !finite(p.v) {
			col.Add(at+".price."+p.field, "%v: must be a number >= 0 (USD per million tokens)", p.v)
		}
	}
	if !(t.Temperature >= 0 && t.Temperature <= 2) {
		col.Add(at+".temperature", "%v: must be between 0 and 2", t.Temperature)
	}
	if t.Seed != nil && (*t.Seed < 0 || *t.Seed > MaxSeed) {
		col.Add(at+".seed", "%d: must be between 0 and %d (negative seeds mean random to some servers; Gemini's seed is 32-bit)", *t.Seed, MaxSeed)
	}
	checkInt(col, at+".breaker.failures", t.Breaker.Failures, 1, MaxBreakerFailures, 5)
	if t.Breaker.Cooldown.D() < time.Second {
		hint := ""
		if t.Breaker.Cooldown == 0 {
			hint = " (omit it for the default 30s)"
		}
		col.Add(at+".breaker.cooldown", "%s: must be at least 1s%s", t.Breaker.Cooldown.D(), hint)
	}
}

// ValidateSim adds the problems of a sim block to col, each field prefixed
// with prefix ("targets[0].sim." or ""). Only the first problem of a field
// is reported: later ones follow from it (a from_run of 0 is also out of
// order).
func ValidateSim(col *yamlx.Collector, prefix string, s *sim.Config) {
	// Empty entries first (Parse reports them too for a config file, and
	// problems.Combine lists them once; a stand-alone sim file is decoded
	// elsewhere).
	n := col.Root
	if p := strings.TrimSuffix(prefix, "."); p != "" {
		n = yamlx.Find(col.Root, p)
	} else if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	seen := map[string]bool{}
	if n != nil {
		walkEmpty(n, strings.TrimSuffix(prefix, "."), func(path, format string, a ...any) {
			col.Add(path, format, a...)
			seen[strings.TrimPrefix(path, prefix)] = true
		})
	}
	// The decoder drops an empty policy (`- ~`): the others are read
	// again and validated without it, each problem under the index its
	// policy is written at, from_run compared with the policy before the
	// empty one.
	v, index := *s, []int(nil)
	if pn := yamlx.Find(col.Root, prefix+"policies"); pn != nil && pn.Kind == yaml.SequenceNode && slices.ContainsFunc(pn.Content, yamlx.IsNull) {
		all, _ := problems.Items[sim.Policy](col.Root, prefix+"policies")
		v.Policies = nil
		for i, item := range pn.Content {
			if !yamlx.IsNull(item) {
				v.Policies = append(v.Policies, all[i])
				index = append(index, i)
			}
		}
	}
	for _, e := range v.Validate() {
		e[0] = policyIndex(e[0], index)
		if seen[e[0]] {
			continue
		}
		seen[e[0]] = true
		msg := simMessage(e[0], e[1])
		// A from_run left out (or null) reads as 0: say it is missing
		// rather than quote a 0 the file does not hold.
		if strings.HasSuffix(e[0], ".from_run") && strings.HasPrefix(msg, "0: ") && col.Root != nil && !yamlx.Given(col.Root, prefix+e[0]) {
			msg = "required: the run id the policy applies from (1 or more)"
		}
		col.Add(prefix+e[0], "%s", msg)
	}
	// noise_band and input_margin read 0 as "the default": an explicit 0
	// (every block at input, say) would be silently replaced.
	for _, f := range []struct {
		name string
		v    float64
		def  string
	}{{"noise_band", s.NoiseBand, "0.12"}, {"input_margin", s.InputMargin, "0.3"}} {
		if f.v == 0 && !seen[f.name] && col.Root != nil && yamlx.Given(col.Root, prefix+f.name) {
			col.Add(prefix+f.name, "0: must be above 0 (omit it for the default %s; a tiny value such as 0.000001 is as good as 0)", f.def)
		}
	}
}

// policyIndex returns field (policies[k].from_run, as sim.Config.Validate
// names it) with the policy's index k replaced by index[k]; field itself
// when index is nil or field names no policy.
func policyIndex(field string, index []int) string {
	rest, ok := strings.CutPrefix(field, "policies[")
	if !ok || index == nil {
		return field
	}
	k, tail, ok := strings.Cut(rest, "]")
	i, err := strconv.Atoi(k)
	if !ok || err != nil || i < 0 || i >= len(index) {
		return field
	}
	return fmt.Sprintf("policies[%d]%s", index[i], tail)
}

// simMessage rewrites the sim's unknown-category message on a thresholds
// or score_shift key: the categories it scores comma-separated, as other
// messages list choices, and, for a category of the vocabulary the sim
// does not score (sexual_minors, other), why it is refused.
func simMessage(field, msg string) string {
	if !strings.HasPrefix(msg, "unknown category") {
		return msg
	}
	scored := strings.Join(simScored(), ", ")
	for _, m := range []struct{ sep, what string }{{".thresholds.", "a threshold"}, {".score_shift.", "a score shift"}} {
		if i := strings.Index(field, m.sep); i >= 0 {
			if cat := field[i+len(m.sep):]; probes.ValidCategory(cat) {
				return fmt.Sprintf("the simulator does not score %s, so %s on it would never apply (it scores %s)", cat, m.what, scored)
			}
		}
	}
	return "unknown category (want one of " + scored + ")"
}

// simScored returns the categories of the vocabulary the simulator
// scores, in vocabulary order: those its validation accepts a threshold on.
var simScored = sync.OnceValue(func() []string {
	var out []string
	for _, cat := range probes.Categories {
		c := sim.Config{Policies: []sim.Policy{{FromRun: 1, Thresholds: map[string]float64{cat: sim.DefaultThreshold}}}}
		if len(c.Validate()) == 0 {
			out = append(out, cat)
		}
	}
	return out
})

// validate checks the attribution block (see Attribution for the
// contract). toleranceSet says the file names a tolerance, so an explicit
// 0 is refused rather than read as the default.
func (a *Attribution) validate(col *yamlx.Collector, toleranceSet bool) {
	u, err := url.Parse(a.Prometheus)
	switch {
	case strings.TrimSpace(a.Prometheus) == "":
		col.Add("attribution.prometheus", "required: the Prometheus API root, e.g. http://prometheus:9090")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		if strings.ContainsAny(a.Prometheus, "@?") {
			// user:password@ or a token in the query: not repeated.
			col.Add("attribution.prometheus", "want an http(s) URL such as http://prometheus:9090 (the value is not repeated: it may hold a credential)")
		} else {
			col.Add("attribution.prometheus", "%q: want an http(s) URL such as http://prometheus:9090", a.Prometheus)
		}
	}
	if strings.TrimSpace(a.Query) == "" {
		col.Add("attribution.query", "required: PromQL returning blocked requests per step by target and category")
	}
	for _, l := range []struct{ field, v string }{{"target_label", a.TargetLabel}, {"category_label", a.CategoryLabel}} {
		// "" is reported as such (emptyStrings).
		if l.v != "" && !labelName(l.v) {
			col.Add("attribution."+l.field, "%q: not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)", l.v)
		}
	}
	if a.TargetLabel == a.CategoryLabel && a.CategoryLabel != "" {
		col.Add("attribution.category_label", "%q: must differ from target_label", a.CategoryLabel)
	}
	step, since := a.Step.D(), a.Since.D()
	if step < time.Second {
		col.Add("attribution.step", "%s: must be at least 1s", step)
	}
	points := max(a.MinPoints, 2)
	minSince := 2 * time.Duration(points) * step
	switch {
	case since <= 0:
		col.Add("attribution.since", "%s: must be positive", since)
	case step >= time.Second && since < minSince:
		col.Add("attribution.since", "%s: shorter than 2 × step × %d points (%s): no series could hold a change", since, points, minSince)
	case step >= time.Second && (since+step-1)/step > AttributionMaxSteps:
		col.Add("attribution.since", "%s at step %s spans %d steps; Prometheus refuses more than %d: raise step or shorten since", since, step, int64((since+step-1)/step), AttributionMaxSteps)
	}
	if a.Tolerance < 0 || (toleranceSet && a.Tolerance == 0) {
		col.Add("attribution.tolerance", "%s: must be positive (omit it for twice the step)", a.Tolerance.D())
	}
	// !(x > 0) also refuses NaN (.nan in YAML), which compares false to
	// everything.
	if !(a.MinZ > 0) || !finite(a.MinZ) {
		col.Add("attribution.min_z", "%v: must be a positive number (omit it for %v)", a.MinZ, DefaultAttributionMinZ)
	}
	if a.MinPoints < 2 {
		col.Add("attribution.min_points", "%d: must be at least 2 (the Welch check needs two values on each side)", a.MinPoints)
	}
	if !(a.MinChange > 0) || !finite(a.MinChange) {
		col.Add("attribution.min_change", "%v: must be a positive number (omit it for %v)", a.MinChange, DefaultAttributionMinChange)
	}
	if !(a.MinRateChange >= 0) || !finite(a.MinRateChange) {
		col.Add("attribution.min_rate_change", "%v: must be a number at least 0 (0: off)", a.MinRateChange)
	}
}

// Limits and defaults of an attribution, as package attribution applies
// them (its tests pin the values equal): by default a change needs
// AttributionMinPoints points on each side, |z| of DefaultAttributionMinZ
// and, without totals, a DefaultAttributionMinChange relative change;
// Prometheus answers at most AttributionMaxSteps steps per query.
const (
	AttributionMinPoints        = 3
	AttributionMaxSteps         = 11000
	DefaultAttributionMinZ      = 3.0
	DefaultAttributionMinChange = 0.5
)

// labelName reports whether s is a valid Prometheus label name.
func labelName(s string) bool {
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// AppAuth reports whether g uses GitHub App installation auth (any of the
// app fields is set; Validate requires all three).
func (g *GitHub) AppAuth() bool {
	return g.AppID != 0 || g.InstallationID != 0 || g.PrivateKeyEnv != ""
}

// validateApp checks the GitHub App fields: all three or none, and never a
// token alongside.
func (g *GitHub) validateApp(col *yamlx.Collector) {
	var set, missing []string
	for _, f := range []struct {
		name string
		ok   bool
	}{{"app_id", g.AppID != 0}, {"installation_id", g.InstallationID != 0}, {"private_key_env", g.PrivateKeyEnv != ""}} {
		if f.ok {
			set = append(set, "github."+f.name)
		} else {
			missing = append(missing, "github."+f.name)
		}
	}
	for _, m := range missing {
		col.Add(m, "required with %s: GitHub App auth needs app_id, installation_id and private_key_env (or remove them all to use token_env)", strings.Join(set, " and "))
	}
	if g.AppID < 0 {
		col.Add("github.app_id", "%d: must be a positive GitHub App id", g.AppID)
	}
	if g.InstallationID < 0 {
		col.Add("github.installation_id", "%d: must be a positive installation id", g.InstallationID)
	}
	// The value is not echoed: it might be the key itself.
	if g.PrivateKeyEnv != "" && (!envName(g.PrivateKeyEnv) || looksLikeSecret(g.PrivateKeyEnv)) {
		col.Add("github.private_key_env", "must name an environment variable holding the PEM private key (letters, digits and '_'), not a file path or the key itself")
	}
	if g.TokenEnv != "" {
		col.Add("github.token_env", "set together with GitHub App auth (%s): use either token_env or app_id/installation_id/private_key_env", strings.Join(set, ", "))
	}
}

// secretShapes are credentials that are also valid variable names, by
// their documented shapes: GitHub tokens (classic, OAuth, user-to-server,
// installation, refresh: a prefix and 36 letters or digits; fine-grained:
// github_pat_ and 82 more), Google API keys (AIza and 35 more), AWS access
// key ids (AKIA or ASIA and 16 capitals or digits). A variable named
// ASIA_OPENAI_API_KEY or ghp_token_for_issues is not one of them.
var secretShapes = []*regexp.Regexp{
	regexp.MustCompile(`^gh[pousr]_[A-Za-z0-9]{36}$`),
	regexp.MustCompile(`^github_pat_[A-Za-z0-9_]{82}$`),
	regexp.MustCompile(`^AIza[A-Za-z0-9_-]{35}$`),
	regexp.MustCompile(`^(AKIA|ASIA)[A-Z0-9]{16}$`),
}

// looksLikeSecret reports whether s, though a valid variable name, looks
// like a credential pasted where its variable's name belongs: one of the
// known credential shapes, or 32+ characters with no '_' of mixed-case
// letters and digits (a Mistral key, say) or of hex digits (an Azure key,
// a classic GitHub token), which variable names are not.
func looksLikeSecret(s string) bool {
	for _, re := range secretShapes {
		if re.MatchString(s) {
			return true
		}
	}
	// A short lower-case prefix and a long mixed-case token (Groq gsk_…,
	// Hugging Face hf_…, Replicate r8_…, Fireworks fw_…): variable names
	// are not written that way.
	if prefixedKey(s) {
		return true
	}
	if len(s) < 32 || strings.Contains(s, "_") {
		return false
	}
	var lower, upper, digit bool
	hex := true
	for _, r := range s {
		lower = lower || r >= 'a' && r <= 'z'
		upper = upper || r >= 'A' && r <= 'Z'
		digit = digit || r >= '0' && r <= '9'
		hex = hex && (r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F')
	}
	// Hex keys (Azure's 32 characters, a classic 40-character GitHub
	// token) are one case only.
	return digit && (lower && upper || hex && (lower || upper))
}

// prefixedToken is a credential-like "prefix_token" (see looksLikeSecret).
var prefixedToken = regexp.MustCompile(`^([a-z0-9]{2,6})[_-]([A-Za-z0-9]{24,})$`)

// prefixedKey reports whether s is a "prefix_token" key: a long
// mixed-case token, or any long token after a known prefix.
func prefixedKey(s string) bool {
	m := prefixedToken.FindStringSubmatch(s)
	return m != nil && (mixedAlnum(m[2]) || knownTokenPrefix[m[1]])
}

// knownTokenPrefix are providers' documented key prefixes, whose token part
// may be letters only (a Hugging Face hf_ token).
var knownTokenPrefix = map[string]bool{"hf": true, "gsk": true, "r8": true, "fw": true, "xai": true, "pplx": true, "nvapi": true, "sk": true}

// mixedAlnum reports whether s holds upper- and lower-case letters and
// digits.
func mixedAlnum(s string) bool {
	var lower, upper, digit bool
	for _, r := range s {
		lower = lower || r >= 'a' && r <= 'z'
		upper = upper || r >= 'A' && r <= 'Z'
		digit = digit || r >= '0' && r <= '9'
	}
	return lower && upper && digit
}

// envName reports whether s is a usable environment variable name.
func envName(s string) bool {
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != "" && len(s) <= 256
}

// ValidateSchedule accepts "@every DURATION" and standard 5-field cron
// expressions, optionally prefixed with CRON_TZ=Zone.
func ValidateSchedule(s string) error {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return fmt.Errorf("%q: bad interval: %v", s, err)
		}
		if d < time.Second {
			return fmt.Errorf("%q: interval must be at least 1s", s)
		}
		return nil
	}
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return fmt.Errorf("%q: not \"@every DURATION\" or a cron expression: %v", s, err)
	}
	// The scheduler refuses an expression that never fires (30 February):
	// so does the config, rather than a daemon at start or on reload.
	if sched.Next(time.Now()).IsZero() {
		return fmt.Errorf("%q: the cron expression never fires", s)
	}
	return nil
}

// plainText reports whether s is valid UTF-8 without control or format
// characters (as corpus names and versions): a model or an option is sent
// in request bodies, headers and URLs and printed on terminals, in logs
// and in issues.
func plainText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

// ProbeTarget converts t for a provider factory, with the resolved key.
func (t *Target) ProbeTarget(key string) probes.Target {
	pt := probes.Target{
		Name: t.Name, Provider: t.Provider, Model: t.Model, Endpoint: t.Endpoint,
		BaseURL: t.BaseURL, APIKey: key, MaxTokens: t.MaxTokens, Temperature: t.Temperature,
		Seed: t.Seed, Options: t.Options,
	}
	if t.Sim != nil {
		pt.Sim = t.Sim
	}
	return pt
}

// Key returns the target's key from its environment variable ("" when the
// provider needs none), without surrounding white space: a key read from
// a file (a Kubernetes secret made with --from-file) often ends in a
// newline, which no HTTP header can carry, and a server trims white space
// around a header value anyway, so the trimmed key is what is sent and
// what must be redacted.
func (t *Target) Key() (string, error) {
	if t.APIKeyEnv == "" {
		return "", nil
	}
	if problem := credentialProblem(t.APIKeyEnv); problem != "" {
		return "", fmt.Errorf("target %s: environment variable %s %s", t.Name, t.APIKeyEnv, problem)
	}
	return strings.TrimSpace(os.Getenv(t.APIKeyEnv)), nil
}

// credentialProblem is what is wrong with the credential the environment
// variable name holds ("" when nothing is): unset, blank, or holding a
// control character (a line break, a tab, an escape) once the white space
// around it is trimmed. A key read from a file of two lines, or pasted
// with a line break in the middle, can be sent in no HTTP header: every
// request would fail before it left, a run that measures nothing rather
// than a configuration error. The value is never echoed.
func credentialProblem(name string) string {
	v, set := os.LookupEnv(name)
	if !set {
		return "is not set"
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return "is empty"
	}
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(v[i:])
		return fmt.Sprintf("holds a control character (%U) inside its value: a line break or tab within the key? No HTTP request can carry it (the value is not repeated)", r)
	}
	return ""
}

// Warnings returns what is valid but probably a mistake, each as
// "FILE:LINE: field: problem": plain-http API roots that are not on
// loopback, which would send a key or token in clear text, and what a
// provider's Warn finds (a base_url ending in the API version segment its
// adapter appends itself, e.g. anthropic's https://api.anthropic.com/v1, or
// in a full endpoint, e.g. …/v1/chat/completions; an openai base_url
// without /v1).
func (c *Config) Warnings() []string {
	var out []string
	clear := func(field, raw, secret string, carriesSecret bool) {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" || !carriesSecret {
			return
		}
		h := u.Hostname()
		if strings.EqualFold(h, "localhost") || net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback() {
			return
		}
		out = append(out, fmt.Sprintf("%s%s: %q is plain http: the %s would travel in clear text (use https)", c.Where(field), field, u.Redacted(), secret))
	}
	for i, t := range c.Targets {
		if t == nil || t.Disabled {
			continue
		}
		switch {
		case t.Provider == "bedrock":
			// SigV4 signs rather than sends the secret key, but a session
			// token (and a Bedrock API key) travels as it is.
			clear(fmt.Sprintf("targets[%d].base_url", i), t.BaseURL, "AWS session token or Bedrock API key", true)
		default:
			clear(fmt.Sprintf("targets[%d].base_url", i), t.BaseURL, "key", t.APIKeyEnv != "")
		}
		// What the provider finds valid but probably wrong (a base_url
		// ending in the API version its adapter appends itself).
		if info, ok := probes.Lookup(t.Provider); ok && info.Warn != nil {
			for _, fe := range info.Warn(t.ProbeTarget("")) {
				field := fmt.Sprintf("targets[%d].%s", i, fe.Field)
				out = append(out, fmt.Sprintf("%s%s: %s", c.Where(field), field, fe.Msg))
			}
		}
	}
	if g := c.GitHub; g != nil {
		clear("github.base_url", g.BaseURL, "token", true)
	}
	return out
}

// Where returns "FILE:LINE: " for the value at path (dotted, as in
// messages), or "" when c came from no file or the file does not set it.
// KeyWarnings returns, in the FILE:LINE: FIELD: form, a warning for a
// github block whose credential variable (token_env, or private_key_env
// for a GitHub App) is unset or blank in getenv: a missing token is no
// configuration error (runs still record their events, and the outbox
// keeps what is owed until the token is there), but `config check` is
// where it should show.
func (c *Config) KeyWarnings(getenv func(string) string) []string {
	g := c.GitHub
	if g == nil {
		return nil
	}
	field, name := "github.token_env", g.TokenEnv
	if g.AppAuth() {
		field, name = "github.private_key_env", g.PrivateKeyEnv
	}
	v := getenv(name)
	if name == "" {
		return nil
	}
	where := c.Where(field)
	if where == "" {
		where = c.Where("github")
	}
	state := "is not set or empty"
	switch t := strings.TrimSpace(v); {
	case t != "" && (g.AppAuth() || !strings.ContainsFunc(t, unicode.IsControl)):
		// A GitHub App's PEM key holds line breaks.
		return nil
	case t != "":
		r, _ := utf8.DecodeRuneInString(t[strings.IndexFunc(t, unicode.IsControl):])
		state = fmt.Sprintf("holds a control character (%U) inside the token (a line break within it?), which no HTTP request can carry (the value is not repeated)", r)
	case v != "":
		state = "holds only white space"
	}
	return []string{fmt.Sprintf("%s%s: environment variable %s %s: runs record their events, but no GitHub issue is opened or updated until it holds the credential (driftprobe outbox lists what is owed)", where, field, name, state)}
}

func (c *Config) Where(path string) string {
	if c.File == "" {
		return ""
	}
	if n := yamlx.Find(c.root, path); n != nil {
		return fmt.Sprintf("%s:%d: ", c.File, n.Line)
	}
	return ""
}

// Target returns the target named name, or nil.
func (c *Config) Target(name string) *Target {
	for _, t := range c.Targets {
		if t != nil && t.Name == name {
			return t
		}
	}
	return nil
}

// Enabled returns the targets that are not disabled. Empty entries (nil
// targets, which Validate refuses) are neither.
func (c *Config) Enabled() []*Target {
	var out []*Target
	for _, t := range c.Targets {
		if t != nil && !t.Disabled {
			out = append(out, t)
		}
	}
	return out
}

func validName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return len(s) <= 100
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func providerNames() string {
	var n []string
	for _, i := range probes.Providers() {
		n = append(n, i.Name)
	}
	return strings.Join(n, ", ")
}
