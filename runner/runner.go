// Package runner executes one run: every probe of the corpus against every
// target, with bounded concurrency, a per-target rate limit, retries decided
// by the outcome's class (never by a status-code list), exponential backoff
// with jitter that honours the provider's Retry-After, one circuit breaker
// per upstream that counts only transient outcomes, a per-request timeout,
// and clean cancellation. Every outcome is stored as an observation in
// batched transactions as it arrives.
//
// A block is sent exactly once: re-sending identical bytes to a
// deterministic classifier cannot change its answer. Extra in-run samples
// (Options.Resample) are measurement, not retry, and are stored as separate
// samples.
package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/sony/gobreaker/v2"
	"golang.org/x/time/rate"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
	"github.com/driftprobe/driftprobe/storage"
)

// MaxRetryWait is the longest backoff a run waits before retrying; a
// provider asking for longer (Retry-After) is not retried in this run.
const MaxRetryWait = 5 * time.Minute

// Reasons recorded on outcomes the runner decides itself.
const (
	ReasonBreakerOpen = "breaker_open"
	ReasonRenderError = "render_error"
)

// Target is a configured target with its built prober.
type Target struct {
	Config *config.Target
	Prober probes.Prober
	ID     int64 // storage id, set by Run
	// Secret is the target's key, used only to redact it from anything
	// stored (providers sometimes echo a key in an error message): from
	// the body and every field of the result, when at least minSecret
	// long, as the adapters do.
	Secret string
}

// minSecret is the shortest key redacted: shorter ones ("x" for a local
// server that wants any key) are no secret, and replacing every such
// substring would mangle the stored evidence. wire.Redact uses the same.
const minSecret = 4

// Options configure a Runner.
type Options struct {
	Config  *config.Config
	Corpus  *corpus.Corpus
	Store   *storage.DB
	Targets []*Target
	// Client sends requests; nil means a client with sane transport limits.
	Client *http.Client
	// Sleep waits d or until ctx ends; nil means a real timer. Every wait
	// of a run goes through it (backoff, Retry-After and the per-target
	// rate limit, reckoned on Now). Tests inject a recorder or a fake
	// clock here instead of sleeping.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for timestamps and latency; nil means time.Now.
	Now func() time.Time
	// Progress is called after each probe completes (for a progress bar).
	Progress func(done, total int)
	// Resample returns how many extra samples of the identical bytes to
	// take after the first answer (e.g. when it differs from the baseline).
	Resample func(t *Target, probeID, requestSHA string, first probes.Result) int
	// OnAttempt observes every attempt (metrics). Optional.
	OnAttempt func(t *Target, class probes.Class, retried bool)
	// OnBreaker observes breaker state changes. Optional.
	OnBreaker func(t *Target, open bool)
	Logger    *slog.Logger
	// BatchSize is how many observations are written per transaction.
	BatchSize int
	// FlushEvery bounds how long an answer waits in a partial batch
	// (default 2s), so a slow or rate-limited run stores what it paid for
	// as it goes: a process killed outright (SIGKILL, OOM, a deadline)
	// loses at most this much, not a whole batch.
	FlushEvery time.Duration
	Version    string
	Host       string
	Note       string
}

// Runner executes runs.
type Runner struct {
	o        Options
	mu       sync.Mutex
	breakers map[string]*breakerGroup
	opened   map[string]bool // breaker keys that opened during this runner's life
	// byURL memoizes breaker lookups per target and request URL, so a
	// probe costs a map hit instead of parsing its URL.
	byURL map[urlKey]*breakerGroup
	// ownClient is set when New made the client: each Run then closes its
	// idle connections when it ends, so a daemon building a runner per run
	// leaves no keep-alive sockets behind (they would linger until the
	// transport's idle timeout, one pool per run).
	ownClient bool
}

type urlKey struct {
	t   *Target
	url string
}

// breakerGroup is one upstream's circuit breaker and the targets sharing it.
type breakerGroup struct {
	cb      *gobreaker.CircuitBreaker[*attemptResult]
	targets []*Target // in config order; guarded by Runner.mu
}

// New returns a Runner.
func New(o Options) *Runner {
	own := o.Client == nil
	if own {
		o.Client = DefaultClient()
	}
	if o.Sleep == nil {
		o.Sleep = SleepContext
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = 2 * time.Second
	}
	return &Runner{o: o, breakers: map[string]*breakerGroup{}, opened: map[string]bool{}, byURL: map[urlKey]*breakerGroup{}, ownClient: own}
}

// MaxResponseHeaderBytes caps the headers of a provider's answer (a
// provider sends a few KB). net/http's default, 10 MB, is no bound worth
// the name: parsed, 10 MB of one-line headers ("1:\r\n2:\r\n…", a million
// names) take some 160 MB and seconds of CPU per answer in flight, 2.6 GB
// at the default concurrency. An answer past it is a transport failure.
const MaxResponseHeaderBytes = 256 << 10

// DefaultClient returns the HTTP client used for providers: keep-alive
// connection reuse, no global timeout (each request carries its own) and
// headers capped at MaxResponseHeaderBytes.
func DefaultClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	tr.MaxResponseHeaderBytes = MaxResponseHeaderBytes
	tr.MaxConnsPerHost = 0
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// SleepContext waits d or until ctx is done.
func SleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// TargetSummary is one target's outcome in a run.
type TargetSummary struct {
	storage.RunTarget
	Provider string
	Counts   map[probes.Class]int // by class, first samples only
}

// Summary is the outcome of a run.
type Summary struct {
	RunID         int64
	Status        string
	CorpusVersion string
	CorpusHash    string
	Started       time.Time
	Duration      time.Duration
	Targets       []*TargetSummary
	// Observations of this run by target id (bodies released after they
	// were stored), for detection without re-reading the database.
	Observations map[int64][]*storage.Observation
}

// Run performs one run and stores it. It returns an error only when the
// run could not be recorded; provider failures are observations. When ctx
// is cancelled the run stops dispatching, keeps what it stored and is
// marked aborted.
func (r *Runner) Run(ctx context.Context) (*Summary, error) {
	o := r.o
	if r.ownClient {
		defer o.Client.CloseIdleConnections()
	}
	st := o.Store
	start := o.Now()
	runID, err := st.BeginRun(context.WithoutCancel(ctx), storage.Run{
		StartedAt: start, CorpusName: o.Corpus.Name, CorpusVersion: o.Corpus.Version, CorpusHash: o.Corpus.Hash,
		ConfigHash: configHash(o.Config), Host: o.Host, Version: o.Version, Note: o.Note,
	})
	if err != nil {
		return nil, fmt.Errorf("recording a new run: %w", err)
	}
	bg := context.WithoutCancel(ctx)
	// A run that cannot be completed is recorded aborted, never left
	// running for the next lease holder to find.
	abort := func(err error) (*Summary, error) {
		err = fmt.Errorf("run %d: %w", runID, err)
		if ferr := st.FinishRun(bg, runID, storage.RunAborted, nil); ferr != nil {
			// It stays marked running until the next run under the lease
			// marks it aborted.
			return nil, &RunError{RunID: runID, Status: storage.RunRunning, Err: errors.Join(err, fmt.Errorf("run %d: marking it aborted: %w", runID, ferr))}
		}
		return nil, &RunError{RunID: runID, Status: storage.RunAborted, Err: err}
	}
	for _, t := range o.Targets {
		id, err := st.EnsureTarget(bg, storage.TargetRow{Name: t.Config.Name, Provider: t.Config.Provider, Model: t.Config.Model, Endpoint: t.Config.Endpoint})
		if err != nil {
			return abort(fmt.Errorf("recording target %s: %w", t.Config.Name, err))
		}
		t.ID = id
	}

	// The workers stop sending once nothing they observe can be stored:
	// an answer that cannot be recorded is spend without evidence.
	sendCtx, stopSending := context.WithCancel(ctx)
	defer stopSending()

	// One writer stores the corpus's probes, then batches observations
	// into transactions. The probes go first, while the first requests are
	// already in flight (an observation names its probe by hash; nothing
	// reads the run before it is finished), so a first run of a large
	// corpus does not wait for them before sending.
	obsCh := make(chan *storage.Observation, 256)
	byTarget := map[int64][]*storage.Observation{}
	writeErr := make(chan error, 1)
	go func() {
		var batch []*storage.Observation
		var firstErr error
		recs := make([]storage.ProbeRecord, len(o.Corpus.Probes))
		for i, p := range o.Corpus.Probes {
			recs[i] = storage.ProbeRecord{SHA256: p.SHA256, ProbeID: p.ID, CorpusVersion: o.Corpus.Version, Role: p.Role, Expect: p.Expect, Tags: p.Tags, Canonical: string(p.Canonical())}
		}
		if err := st.SaveProbes(bg, recs); err != nil {
			firstErr = fmt.Errorf("storing the corpus's probes: %w", err)
			stopSending()
		}
		flush := func() {
			if len(batch) > 0 && firstErr == nil {
				if err := st.InsertObservations(bg, batch); err != nil {
					firstErr = fmt.Errorf("store observations: %w", err)
					stopSending()
				}
			}
			for _, ob := range batch {
				ob.Body, ob.RequestBody = nil, nil // stored; keep memory flat
				byTarget[ob.TargetID] = append(byTarget[ob.TargetID], ob)
			}
			batch = batch[:0]
		}
		// The timer runs only while a partial batch waits.
		tick := time.NewTimer(o.FlushEvery)
		tick.Stop()
		defer tick.Stop()
		for {
			select {
			case ob, ok := <-obsCh:
				if !ok {
					flush()
					writeErr <- firstErr
					return
				}
				if len(batch) == 0 {
					tick.Reset(o.FlushEvery)
				}
				batch = append(batch, ob)
				if len(batch) >= o.BatchSize {
					tick.Stop()
					flush()
				}
			case <-tick.C:
				flush()
			}
		}
	}()

	total := len(o.Targets) * len(o.Corpus.Probes)
	var doneMu sync.Mutex
	done := 0
	progress := func() {
		if o.Progress == nil {
			return
		}
		doneMu.Lock()
		done++
		d := done
		doneMu.Unlock()
		o.Progress(d, total)
	}

	// Requests in flight across all targets.
	global := make(chan struct{}, max(1, o.Config.Concurrency))
	runCtx := probes.WithRun(sendCtx, runID)
	r.planBreakers()
	sums := make([]*TargetSummary, len(o.Targets))
	var wg sync.WaitGroup
	for i, t := range o.Targets {
		wg.Add(1)
		go func(i int, t *Target) {
			defer wg.Done()
			sums[i] = r.runTarget(runCtx, runID, t, obsCh, global, progress)
		}(i, t)
	}
	wg.Wait()
	close(obsCh)
	if err := <-writeErr; err != nil {
		return abort(err)
	}

	status := storage.RunComplete
	var rts []storage.RunTarget
	for _, s := range sums {
		rts = append(rts, s.RunTarget)
		if s.Status != storage.TargetComplete && status == storage.RunComplete {
			status = storage.RunPartial
		}
	}
	if ctx.Err() != nil {
		status = storage.RunAborted
	}
	if err := st.FinishRun(bg, runID, status, rts); err != nil {
		// Its observations are stored; it stays marked running until the
		// next run under the lease marks it aborted.
		return nil, &RunError{RunID: runID, Status: storage.RunRunning, Err: fmt.Errorf("run %d: recording its end (%s): %w", runID, status, err)}
	}
	sort.Slice(sums, func(a, b int) bool { return sums[a].Target < sums[b].Target })
	return &Summary{RunID: runID, Status: status, CorpusVersion: o.Corpus.Version, CorpusHash: o.Corpus.Hash, Started: start, Duration: o.Now().Sub(start), Targets: sums, Observations: byTarget}, nil
}

// RunError is a run that failed after it was recorded: RunID names it and
// Status is what the database holds for it now (aborted, or still running
// when even that could not be recorded: the next run under the lease marks
// it aborted).
type RunError struct {
	RunID  int64
	Status string
	Err    error
}

func (e *RunError) Error() string { return e.Err.Error() }
func (e *RunError) Unwrap() error { return e.Err }

// job is one probe for one target.
type job struct {
	probe *corpus.Probe
	req   *probes.Request
	err   error
}

// TargetPlan is what a run would send to one target, computed without
// sending anything.
//
// How many requests a run then makes follows from it: every probe that
// renders is sent once; after a verdict, Options.Resample may ask for
// extra samples of the identical bytes; each of these sends is attempted
// up to the target's max_attempts (retries of retryable classes only). A
// probe that does not render sends nothing. A circuit breaker that opens,
// or a cancelled run, sends fewer.
type TargetPlan struct {
	Probes       int // probes of the corpus
	RenderErrors int // probes the target cannot render (recorded as client errors)
	RequestBytes int // total request body bytes
	// RequestsSHA256 is the SHA-256 of the sorted lines
	// "probe_id:request_sha256\n" over every probe ("render-error" for a
	// probe that does not render): equal across runs exactly when every
	// request is byte-identical. A run reports the same value.
	RequestsSHA256 string
	// Origin is the endpoint the requests go to (storage.RunTarget.Origin):
	// the prober's own identity (probes.Originer), else the origin of the
	// first rendered request's URL; "" when nothing renders.
	Origin string
	// Requests is every probe's request in corpus order, the lines
	// RequestsSHA256 is made of. Only Plan fills it.
	Requests []ProbePlan
	// NoOutput: the requests have no model generate output (a
	// classification endpoint: probes.Generates is false), so none carries
	// max_tokens and no output is billed. Only Plan fills it.
	NoOutput bool
}

// ProbePlan is one probe's request as a run renders it.
type ProbePlan struct {
	ProbeID     string
	ProbeSHA256 string // the probe's canonical hash (changes only with the corpus)
	// RequestSHA256 is the request's fingerprint (probes.Request.SHA256), as
	// observations record it; storage.RenderError when it does not render.
	RequestSHA256 string
	BodyBytes     int   // request body bytes (0 when it does not render)
	Err           error // why it does not render; nil when it does
}

// Plan renders every probe of c for t, as a run does first, and sends
// nothing.
func Plan(c *corpus.Corpus, t *Target) TargetPlan {
	jobs, p := render(c, t)
	p.NoOutput = !probes.Generates(t.Prober)
	p.Requests = make([]ProbePlan, len(jobs))
	for i, j := range jobs {
		pp := ProbePlan{ProbeID: j.probe.ID, ProbeSHA256: j.probe.SHA256, RequestSHA256: storage.RenderError, Err: j.err}
		if j.err == nil {
			pp.RequestSHA256, pp.BodyBytes = j.req.SHA256(), len(j.req.Body)
		}
		p.Requests[i] = pp
	}
	return p
}

func render(c *corpus.Corpus, t *Target) ([]job, TargetPlan) {
	plan := TargetPlan{Probes: len(c.Probes)}
	jobs := make([]job, len(c.Probes))
	lines := make([]string, len(jobs))
	for i, p := range c.Probes {
		req, err := t.Prober.Render(p.Wire())
		jobs[i] = job{probe: p, req: req, err: err}
		fp := storage.RenderError
		if err == nil {
			if plan.Origin == "" {
				plan.Origin = originOf(t, req)
			}
			fp = req.SHA256()
			plan.RequestBytes += len(req.Body)
		} else {
			plan.RenderErrors++
		}
		lines[i] = p.ID + ":" + fp + "\n"
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
	}
	plan.RequestsSHA256 = hex.EncodeToString(h.Sum(nil))
	return jobs, plan
}

// Origin is the endpoint a run of c sends t's requests to (see
// TargetPlan.Origin): "" when c's first probe does not render for t.
func Origin(t *Target, c *corpus.Corpus) string {
	if len(c.Probes) == 0 {
		return ""
	}
	req, err := t.Prober.Render(c.Probes[0].Wire())
	if err != nil {
		return ""
	}
	return originOf(t, req)
}

// originOf is t's endpoint identity: the prober's own (probes.Originer),
// else probes.RequestOrigin of req, qualified by the account the target
// speaks for there when its prober names one (probes.AccountScoper:
// OpenAI's organization and project), so that switching accounts moves
// the target as switching endpoints does.
func originOf(t *Target, req *probes.Request) string {
	origin := ""
	if o, ok := t.Prober.(probes.Originer); ok {
		origin = o.Origin()
	}
	if origin == "" {
		origin = probes.RequestOrigin(req)
	}
	if a, ok := t.Prober.(probes.AccountScoper); ok {
		origin = probes.ScopedOrigin(origin, a.AccountScope())
	}
	return origin
}

func (r *Runner) runTarget(ctx context.Context, runID int64, t *Target, out chan<- *storage.Observation, global chan struct{}, progress func()) *TargetSummary {
	o := r.o
	tc := t.Config
	start := o.Now()
	sum := &TargetSummary{Provider: tc.Provider, Counts: map[probes.Class]int{}}
	sum.RunID, sum.TargetID, sum.Target, sum.Model = runID, t.ID, tc.Name, tc.Model

	// Render every probe first: the fingerprint set covers the whole corpus
	// whatever the answers are.
	jobs, plan := render(o.Corpus, t)
	sum.RequestsSHA256, sum.Origin = plan.RequestsSHA256, plan.Origin

	var limiter *rate.Limiter
	if tc.RateLimitRPM > 0 {
		limiter = rate.NewLimiter(rate.Limit(tc.RateLimitRPM/60), 1)
	}
	var mu sync.Mutex
	work := make(chan job)
	var wg sync.WaitGroup
	for w := 0; w < tc.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				obs, lost := r.probe(ctx, runID, t, j, limiter, global)
				mu.Lock()
				for _, ob := range obs {
					sum.tally(ob)
				}
				sum.spend(lost, tc)
				mu.Unlock()
				for _, ob := range obs {
					out <- ob
				}
				progress()
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case <-ctx.Done():
			break feed
		case work <- j:
		}
	}
	close(work)
	wg.Wait()

	sum.Duration = o.Now().Sub(start)
	// The breaker may have opened on the last probes without rejecting any.
	for _, j := range jobs {
		if j.req != nil {
			r.mu.Lock()
			sum.BreakerOpened = sum.BreakerOpened || r.opened[breakerKey(t, j.req.URL)]
			r.mu.Unlock()
			break
		}
	}
	first := sum.Observations
	bad := sum.Transient + sum.Unavailable
	switch {
	case ctx.Err() != nil:
		sum.Status = storage.TargetAborted
	case sum.BreakerOpened || first == 0 || float64(bad)/float64(first) > o.Config.Detection.DegradedFraction:
		sum.Status = storage.TargetDegraded
	default:
		sum.Status = storage.TargetComplete
	}
	return sum
}

func (s *TargetSummary) tally(ob *storage.Observation) {
	if ob.Sample == 0 {
		s.Observations++
		c := ob.Result.Class
		s.Counts[c]++
		switch {
		case c.IsVerdict():
			s.Verdicts++
		case c == probes.Transient:
			s.Transient++
			if ob.Result.Reason == ReasonBreakerOpen {
				s.BreakerOpened = true
			}
		case c == probes.ClientError:
			s.ClientErrors++
		case c == probes.FilterUnavailable:
			s.Unavailable++
		}
	}
	s.Requests += ob.Attempts
	if ob.Attempts > 1 {
		s.Retries += ob.Attempts - 1
	}
	s.TokensIn += ob.Result.TokensIn
	s.TokensOut += ob.Result.TokensOut
	s.CostUSD += ob.CostUSD
}

// spend counts what a send that cancellation interrupted spent (lost, as
// probe returns it; nil: nothing): every attempt it started is a request
// (those after its first, retries), and the cost is the tokens billed by
// those that were answered. tokens_in/tokens_out, the recorded answers'
// own usage, are unchanged: no answer of it is recorded.
func (s *TargetSummary) spend(lost *attemptResult, tc *config.Target) {
	if lost == nil {
		return
	}
	s.Requests += lost.attempts
	if lost.attempts > 1 {
		s.Retries += lost.attempts - 1
	}
	s.CostUSD += cost(lost, tc)
}

// probe sends one probe (and any extra samples) and returns observations.
// A cancelled context yields no observation for requests it interrupted;
// they are still counted: lost is the send it interrupted (see send), nil
// when none was, and TargetSummary.spend counts it.
func (r *Runner) probe(ctx context.Context, runID int64, t *Target, j job, limiter *rate.Limiter, global chan struct{}) (obs []*storage.Observation, lost *attemptResult) {
	base := storage.Observation{RunID: runID, TargetID: t.ID, ProbeID: j.probe.ID, ProbeSHA256: j.probe.SHA256}
	if j.err != nil {
		ob := base
		ob.RequestSHA256 = storage.RenderError
		ob.Result = probes.Result{Class: probes.ClientError, Reason: ReasonRenderError, Message: j.err.Error()}
		ob.ObservedAt = r.o.Now()
		return []*storage.Observation{&ob}, nil
	}
	base.RequestSHA256 = j.req.SHA256()
	first, ok := r.send(ctx, t, j.req, limiter, global)
	if !ok {
		return nil, first
	}
	ob := base
	fill(&ob, first, j.req, t.Config, r.o.Config.MaxBody)
	obs = []*storage.Observation{&ob}
	if r.o.Resample != nil && first.result.Class.IsVerdict() {
		n := r.o.Resample(t, j.probe.ID, base.RequestSHA256, first.result)
		for s := 1; s <= n; s++ {
			a, ok := r.send(ctx, t, j.req, limiter, global)
			if !ok {
				return obs, a
			}
			extra := base
			extra.Sample = s
			fill(&extra, a, j.req, t.Config, r.o.Config.MaxBody)
			obs = append(obs, &extra)
		}
	}
	return obs, nil
}

// fill records attempt a in ob. The answer was classified whole (up to
// ClassifyLimit); the first keep bytes of it (max_body_bytes) are stored as
// evidence, BodyTruncated set when that is not all of it, and BodySHA256
// is the hash of the bytes stored, so stored evidence always verifies.
func fill(ob *storage.Observation, a *attemptResult, req *probes.Request, tc *config.Target, keep int) {
	ob.Result = a.result
	ob.HTTPStatus = a.resp.Status
	ob.Latency = a.resp.Latency
	ob.Attempts = a.attempts
	ob.RequestBody = req.Body
	ob.RequestMethod, ob.RequestPath = req.Method, req.Path
	ob.RequestPinned = req.PinnedHeaders()
	ob.Body = a.resp.Body
	ob.BodyTruncated = a.resp.Truncated
	if keep > 0 && len(ob.Body) > keep {
		ob.Body, ob.BodyTruncated = bytes.Clone(ob.Body[:keep]), true // not a view: the answer read may be up to ClassifyLimit
	}
	if ob.Body != nil {
		s := sha256.Sum256(ob.Body)
		ob.BodySHA256 = hex.EncodeToString(s[:])
	}
	// The cost is what every attempt was billed; tokens_in/tokens_out are
	// the answer's own usage, as it reported them.
	ob.CostUSD = cost(a, tc)
	ob.ObservedAt = a.at
	// Compress here, in the worker, so the single writer only inserts.
	ob.CompressBodies()
}

// cost is what a's attempts were billed at tc's prices.
func cost(a *attemptResult, tc *config.Target) float64 {
	return (float64(a.billedIn)*tc.Price.InputPerMTok + float64(a.billedOut)*tc.Price.OutputPerMTok) / 1e6
}

type attemptResult struct {
	resp     *probes.Response
	result   probes.Result
	attempts int // the send's attempts started (r.attempt called), this one included
	at       time.Time
	// billedIn and billedOut are the tokens every attempt of the send
	// reported, this one included: a retried answer (a 2xx without
	// usable content) is billed too, so the cost counts it.
	billedIn, billedOut int
}

// errTransient marks an attempt that counts against the breaker.
var errTransient = errors.New("transient upstream failure")

// breakerKey names the upstream a request goes to: one breaker per
// provider and scheme://host:port, however the base_url spells them.
func breakerKey(t *Target, rawURL string) string {
	return t.Config.Provider + "|" + upstreamKey(rawURL)
}

// upstreamKey is the server u names, one spelling for each: the scheme and
// host in lower case (DNS names are case-insensitive), without a trailing
// root dot or the scheme's default port, so "https://API.example.com:443/"
// and "https://api.example.com/v1" are one upstream.
func upstreamKey(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	scheme := strings.ToLower(p.Scheme)
	host := strings.ToLower(strings.TrimSuffix(p.Hostname(), "."))
	port := p.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}

// planBreakers makes, before any request is sent, one breaker per upstream
// the run's targets use, so that targets sharing an upstream share its
// health whatever order they start in. When their settings differ the
// strictest win: the fewest failures to open, the longest cooldown.
func (r *Runner) planBreakers() {
	if len(r.o.Corpus.Probes) == 0 {
		return
	}
	members := map[string][]*Target{}
	var keys []string
	for _, t := range r.o.Targets {
		req, err := t.Prober.Render(r.o.Corpus.Probes[0].Wire())
		if err != nil {
			continue // its probes fail to render, or it gets a breaker on first use
		}
		k := breakerKey(t, req.URL)
		if members[k] == nil {
			keys = append(keys, k)
		}
		members[k] = append(members[k], t)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		if g, ok := r.breakers[k]; ok {
			for _, t := range members[k] {
				g.add(t)
			}
			continue
		}
		r.breakers[k] = r.newBreaker(k, members[k])
	}
}

func (g *breakerGroup) add(t *Target) {
	for _, m := range g.targets {
		if m == t {
			return
		}
	}
	g.targets = append(g.targets, t)
}

// breaker returns the breaker for req's upstream (made now, with t's
// settings, for an upstream planBreakers did not see).
func (r *Runner) breaker(t *Target, req *probes.Request) *gobreaker.CircuitBreaker[*attemptResult] {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g, ok := r.byURL[urlKey{t, req.URL}]; ok {
		return g.cb
	}
	key := breakerKey(t, req.URL)
	g, ok := r.breakers[key]
	if !ok {
		g = r.newBreaker(key, []*Target{t})
		r.breakers[key] = g
	}
	g.add(t)
	r.byURL[urlKey{t, req.URL}] = g
	return g.cb
}

// newBreaker makes the breaker of one upstream shared by ts (at least one).
// Only transient outcomes are failures; a policy verdict is the upstream
// working as designed, and cancellation is nobody's failure. A state change
// is logged once and reported for every target sharing the breaker.
func (r *Runner) newBreaker(key string, ts []*Target) *breakerGroup {
	failures, cooldown := ts[0].Config.Breaker.Failures, ts[0].Config.Breaker.Cooldown.D()
	for _, t := range ts[1:] {
		failures = min(failures, t.Config.Breaker.Failures)
		cooldown = max(cooldown, t.Config.Breaker.Cooldown.D())
	}
	g := &breakerGroup{targets: append([]*Target(nil), ts...)}
	g.cb = gobreaker.NewCircuitBreaker[*attemptResult](gobreaker.Settings{
		Name:         key,
		MaxRequests:  1,
		Timeout:      cooldown,
		ReadyToTrip:  func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= uint32(failures) },
		IsSuccessful: func(err error) bool { return err == nil || !errors.Is(err, errTransient) },
		IsExcluded: func(err error) bool {
			return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
		},
		OnStateChange: func(_ string, from, to gobreaker.State) {
			r.mu.Lock()
			if to == gobreaker.StateOpen {
				r.opened[key] = true
			}
			sharing := append([]*Target(nil), g.targets...)
			r.mu.Unlock()
			names := make([]string, len(sharing))
			for i, t := range sharing {
				names[i] = t.Config.Name
			}
			r.o.Logger.Warn("circuit breaker", "upstream", key, "targets", strings.Join(names, ","), "from", from.String(), "to", to.String())
			if r.o.OnBreaker != nil {
				for _, t := range sharing {
					r.o.OnBreaker(t, to == gobreaker.StateOpen)
				}
			}
		},
	})
	return g
}

func upstream(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Scheme + "://" + p.Host
}

// send performs attempts until a non-retryable class, the attempt limit or
// cancellation. ok is false when cancellation interrupted it: the result
// is then no answer, only what the send spent: attempts, the attempts it
// started (r.attempt called: sent, or being sent, when the run stopped; 0
// when it stopped the first before it started: refused by the breaker,
// waiting for the rate limit or a request slot), and billedIn/billedOut,
// the tokens of those that were answered.
func (r *Runner) send(ctx context.Context, t *Target, req *probes.Request, limiter *rate.Limiter, global chan struct{}) (*attemptResult, bool) {
	tc := t.Config
	br := r.breaker(t, req)
	var bo *backoff.ExponentialBackOff // made on the first retry: most probes need none
	var last *attemptResult
	var billedIn, billedOut int
	interrupted := func(started int) (*attemptResult, bool) {
		return &attemptResult{resp: &probes.Response{}, attempts: started, billedIn: billedIn, billedOut: billedOut, at: r.o.Now()}, false
	}
	stopped := func() (*attemptResult, bool) {
		if last != nil {
			// The breaker only stopped a retry: what the provider last
			// answered (status, body, request id) is the evidence.
			return last, true
		}
		return &attemptResult{resp: &probes.Response{}, result: probes.Result{Class: probes.Transient, Reason: ReasonBreakerOpen}, at: r.o.Now()}, true
	}
	for attempt := 1; attempt <= tc.MaxAttempts; attempt++ {
		// A request the breaker would refuse is refused before it waits for
		// a rate-limit slot: a probe not sent spends none of the run's time.
		if rejects(br) {
			if ctx.Err() != nil {
				return interrupted(attempt - 1)
			}
			return stopped()
		}
		if limiter != nil {
			if err := r.pace(ctx, limiter); err != nil {
				return interrupted(attempt - 1)
			}
		}
		select {
		case global <- struct{}{}:
		case <-ctx.Done():
			return interrupted(attempt - 1)
		}
		if ctx.Err() != nil {
			// Stopped as the slot came free: nothing sent.
			<-global
			return interrupted(attempt - 1)
		}
		started := false
		res, err := br.Execute(func() (*attemptResult, error) {
			started = true
			a := r.attempt(ctx, t, req)
			if err := ctx.Err(); err != nil {
				return a, err // cancelled: excluded, nobody's failure
			}
			if a.result.Class.BreakerFailure() {
				return a, errTransient
			}
			return a, nil
		})
		<-global
		if ctx.Err() != nil {
			// A cancelled request is no observation, but it was sent: it
			// counts, billed if it was answered all the same.
			if !started {
				return interrupted(attempt - 1)
			}
			if res != nil {
				billedIn += max(res.result.TokensIn, 0)
				billedOut += max(res.result.TokensOut, 0)
			}
			return interrupted(attempt)
		}
		if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
			return stopped()
		}
		res.attempts = attempt
		billedIn += max(res.result.TokensIn, 0)
		billedOut += max(res.result.TokensOut, 0)
		res.billedIn, res.billedOut = billedIn, billedOut
		last = res
		if r.o.OnAttempt != nil {
			r.o.OnAttempt(t, res.result.Class, attempt > 1)
		}
		if !res.result.Class.Retryable() || attempt == tc.MaxAttempts {
			break
		}
		if bo == nil {
			bo = backoff.NewExponentialBackOff()
			bo.InitialInterval = 500 * time.Millisecond
			bo.MaxInterval = 30 * time.Second
			bo.RandomizationFactor = 0.5
			bo.Reset()
		}
		wait := bo.NextBackOff()
		if ra := res.result.RetryAfter; ra > wait {
			wait = ra
		}
		if wait > MaxRetryWait {
			// The provider asked for longer than a run should wait: honour it
			// by not retrying in this run (the outcome stays transient).
			r.o.Logger.Info("not retrying: provider asked to wait too long", "target", tc.Name, "wait", wait)
			break
		}
		r.o.Logger.Debug("retrying", "target", tc.Name, "class", res.result.Class, "reason", res.result.Reason, "wait", wait)
		if err := r.o.Sleep(ctx, wait); err != nil {
			return interrupted(attempt) // the retry never started
		}
	}
	return last, true
}

// rejects reports whether br would refuse a request now: open, or half-open
// with its one trial request (Settings.MaxRequests) already taken. Execute
// still decides; this only spares a refused request its wait.
func rejects(br *gobreaker.CircuitBreaker[*attemptResult]) bool {
	switch br.State() {
	case gobreaker.StateOpen:
		return true
	case gobreaker.StateHalfOpen:
		c := br.Counts()
		return c.Requests > c.TotalExclusions
	}
	return false
}

// pace waits for the target's next request slot on the run's clock
// (Options.Now and Options.Sleep, as every other wait of a run), so the
// rate limit is what an injected clock sees. The slot is given back when
// the run ends during the wait.
func (r *Runner) pace(ctx context.Context, limiter *rate.Limiter) error {
	now := r.o.Now()
	res := limiter.ReserveN(now, 1)
	if !res.OK() {
		return fmt.Errorf("rate limit: no request slot") // burst 1: cannot happen
	}
	if d := res.DelayFrom(now); d > 0 {
		if err := r.o.Sleep(ctx, d); err != nil {
			res.CancelAt(r.o.Now())
			return err
		}
	}
	return ctx.Err()
}

// attempt sends the request once and classifies the answer.
func (r *Runner) attempt(ctx context.Context, t *Target, req *probes.Request) *attemptResult {
	tc := t.Config
	actx, cancel := context.WithTimeout(ctx, tc.Timeout.D())
	defer cancel()
	hr, err := http.NewRequestWithContext(actx, req.Method, req.URL, bytes.NewReader(req.Body))
	resp := &probes.Response{}
	if err == nil {
		for k, v := range req.Header {
			hr.Header[k] = append([]string(nil), v...)
		}
		hr.Header.Set("User-Agent", "driftprobe")
		if a, ok := t.Prober.(probes.Authorizer); ok {
			err = a.Authorize(actx, hr)
		}
	}
	start := r.o.Now()
	// cutStatus is the status of an answer whose body was cut short: it is
	// read as a transport failure (status 0), but its headers arrived whole.
	cutStatus := 0
	if err == nil {
		var hresp *http.Response
		hresp, err = r.o.Client.Do(hr)
		if err == nil {
			// The timeout and a cancelled run end the body's read too: a
			// 101 Switching Protocols answer's body is the raw connection,
			// which no longer follows the request's context.
			stop := context.AfterFunc(actx, func() { hresp.Body.Close() })
			defer stop()
			resp.Status = hresp.StatusCode
			resp.Header = hresp.Header
			// Classify the whole answer; fill stores its first
			// max_body_bytes. Only an answer past ClassifyLimit is cut
			// before it is read (and reads as truncated_response).
			limit := max(int64(r.o.Config.MaxBody), ClassifyLimit)
			body, rerr := readBody(hresp, limit)
			if int64(len(body)) > limit {
				body, resp.Truncated = body[:limit], true
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(hresp.Body, 1<<20))
			hresp.Body.Close()
			resp.Body = body
			if rerr != nil && !resp.Truncated {
				resp.Err = fmt.Errorf("read body: %w", rerr)
				cutStatus, resp.Status = resp.Status, 0
			}
		}
	}
	if err != nil {
		resp.Err = scrub(err, req.URL)
	}
	resp.Latency = r.o.Now().Sub(start)
	res := safeClassify(t.Prober, req, resp)
	if cutStatus >= 300 && res.RetryAfter <= 0 {
		// A 429 or 503 cut short still asked for its wait: retrying it
		// after the backoff would ignore an hour's Retry-After.
		res.RetryAfter = wire.RetryAfter(resp.Header, r.o.Now())
	}
	if resp.Err != nil && res.Message == "" {
		// The cause, stored with the observation (an untrusted
		// certificate is told apart from a flaky network): the error
		// without its URL (scrub), the key redacted below.
		res.Message = wire.Truncate(resp.Err.Error(), wire.MaxMessage)
	}
	if rd, ok := t.Prober.(probes.Redactor); ok {
		resp.Body = rd.Redact(resp.Body)
	}
	if len(t.Secret) >= minSecret {
		resp.Body = wire.RedactBytes(resp.Body, t.Secret)
		res = wire.Redact(res, t.Secret)
	}
	return &attemptResult{resp: resp, result: res, at: r.o.Now()}
}

// ClassifyLimit is how much of an answer a run reads and classifies when
// max_body_bytes is smaller: a chat answer within max_tokens, or a
// provider's error page, is far below it, so a small max_body_bytes caps
// only the evidence stored, never the verdict.
const ClassifyLimit = 4 << 20

// readBody reads up to limit+1 bytes of the body (one more than the cap,
// to detect truncation) exactly as io.ReadAll would, errors included, but
// into a buffer sized from Content-Length when it is announced, so a body
// takes one allocation instead of a doubling series.
func readBody(hresp *http.Response, limit int64) ([]byte, error) {
	r := io.LimitReader(hresp.Body, limit+1)
	size := int64(512)
	if n := hresp.ContentLength; n >= 0 {
		size = min(n, limit) + 1 // +1: room to see EOF without growing
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			if int64(len(b)) > limit {
				// The capped reader is spent (its next read is EOF): growing
				// to look for it would copy the whole cap once more.
				return b, nil
			}
			// Double, never past the cap (append's steps, slices.Grow's
			// too, overshoot it by up to a quarter, kept with the answer
			// until it is stored).
			nb := make([]byte, len(b), min(2*int64(cap(b)), limit+1))
			copy(nb, b)
			b = nb
		}
	}
}

// Classify reads resp with p exactly as a run does: a classifier that
// panics on a provider's garbage yields a client_error, never a crash.
func Classify(p probes.Prober, req *probes.Request, resp *probes.Response) probes.Result {
	return safeClassify(p, req, resp)
}

// safeClassify guarantees a provider's garbage never crashes a run.
func safeClassify(p probes.Prober, req *probes.Request, resp *probes.Response) (res probes.Result) {
	defer func() {
		if v := recover(); v != nil {
			res = probes.Result{Class: probes.ClientError, Reason: "classifier_panic", Message: fmt.Sprint(v)}
		}
	}()
	return p.Classify(req, resp)
}

// scrub removes the URL's query (which could carry a key for some
// providers) from transport errors before they are stored or logged.
func scrub(err error, u string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, upstream(u), ue.Err)
	}
	return err
}

func configHash(c *config.Config) string {
	if c == nil {
		return ""
	}
	h := sha256.New()
	for _, t := range c.Targets {
		fmt.Fprintf(h, "%s|%s|%s|%s|%s|%d|%v|%v\n", t.Name, t.Provider, t.Model, t.Endpoint, t.BaseURL, t.MaxTokens, t.Temperature, t.Seed)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
