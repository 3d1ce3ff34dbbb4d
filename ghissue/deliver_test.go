package ghissue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// simYAML scripts two events: sim-prod tightens violence and starts
// enforcing privacy at run 3 (confirmed run 4), adds harassment at run 5
// (confirmed run 6: a comment), and reverts everything at run 7
// (confirmed run 8: a revert comment and close); sim-candidate tightens
// self_harm at run 4 (confirmed run 5).
const simYAML = `database: %s
confirm_runs: 2
targets:
  - name: sim-prod
    provider: sim
    model: sim-large
    sim:
      policies:
        - from_run: 1
          thresholds: {privacy: 1.01}
          fingerprint: fp_prod_a
        - from_run: 3
          thresholds: {violence: 0.3, privacy: 0.5}
        - from_run: 5
          thresholds: {harassment: 0.25}
        - from_run: 7
          thresholds: {violence: 0.5, privacy: 1.01, harassment: 0.5}
  - name: sim-candidate
    provider: sim
    model: sim-large-2
    sim:
      policies:
        - from_run: 1
          thresholds: {self_harm: 0.6}
        - from_run: 4
          thresholds: {self_harm: 0.28}
github:
  repo: acme/llm-drift
  token_env: DRIFTPROBE_TEST_GH_TOKEN
  base_url: %s
  labels: [llm-drift, "team:platform"]
  close_on_revert: true
`

const (
	testToken = "ghp_TESTtoken0123456789SECRETvalueXYZ"
	tokenEnv  = "DRIFTPROBE_TEST_GH_TOKEN"
	totalRuns = 9
)

type sys struct {
	t       testing.TB
	cfg     *config.Config
	cp      *corpus.Corpus
	st      *storage.DB
	targets []*runner.Target
	closeT  func()
}

func newSys(t testing.TB, db, baseURL string) *sys {
	t.Helper()
	return newSysFrom(t, simYAML, db, baseURL)
}

// newSysFrom is newSys with another config template (database and GitHub
// base URL, in that order).
func newSysFrom(t testing.TB, tmpl, db, baseURL string) *sys {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(fmt.Sprintf(tmpl, db, baseURL)))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(true); err != nil {
		t.Fatal(err)
	}
	s := &sys{t: t, cfg: cfg}
	s.open()
	t.Cleanup(s.close)
	return s
}

func (s *sys) open() {
	s.t.Helper()
	var err error
	if s.cp, err = app.LoadCorpus(s.cfg, "", false); err != nil {
		s.t.Fatal(err)
	}
	if s.st, err = storage.Open(context.Background(), s.cfg.Database); err != nil {
		s.t.Fatal(err)
	}
	if s.targets, s.closeT, err = app.BuildTargets(s.cfg); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sys) close() {
	if s.closeT != nil {
		s.closeT()
		s.closeT = nil
	}
	if s.st != nil {
		s.st.Close()
		s.st = nil
	}
}

func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func (s *sys) run() *app.RunResult {
	s.t.Helper()
	res, err := app.RunOnce(context.Background(), s.cfg, s.cp, s.st, s.targets, app.RunOptions{Sleep: noSleep})
	if err != nil {
		s.t.Fatalf("run: %v", err)
	}
	return res
}

var (
	fixtureOnce sync.Once
	fixturePath string
	fixtureErr  error
	fixtureDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

// fixture returns a copy of a database with totalRuns sim runs and the
// scripted events queued in the outbox (nothing delivered).
func fixture(t *testing.T, baseURL string) *sys {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureDir, fixtureErr = os.MkdirTemp("", "ghissue-fixture-")
		if fixtureErr != nil {
			return
		}
		fixturePath = filepath.Join(fixtureDir, "fixture.db")
		s := newSys(t, fixturePath, "http://127.0.0.1:1/")
		for i := 0; i < totalRuns; i++ {
			s.run()
		}
		s.close()
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	data, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "test.db")
	if err := os.WriteFile(db, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return newSys(t, db, baseURL)
}

// clock is an injected clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now().UTC().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func env(k string) string {
	if k == tokenEnv {
		return testToken
	}
	return ""
}

func deliver(t *testing.T, s *sys, c *clock, o ghissue.Options) *ghissue.Result {
	t.Helper()
	o.Now = c.Now
	if o.Getenv == nil {
		o.Getenv = env
	}
	s.st.SetClock(c.Now)
	res, err := ghissue.Deliver(context.Background(), s.st, s.cfg, o)
	if err != nil {
		t.Fatalf("deliver: %v", err)
	}
	return res
}

func pending(t *testing.T, s *sys) []ghissue.PendingRow {
	t.Helper()
	p, err := ghissue.Pending(context.Background(), s.st)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func events(t *testing.T, s *sys) []*diff.Event {
	t.Helper()
	evs, err := diff.ListEvents(context.Background(), s.st, diff.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// checkDelivered asserts the end state of the scripted story: exactly one
// issue per event, found by marker; each update's comment exactly once;
// event 1 closed as completed; the mapping in SQLite; the outbox empty.
func checkDelivered(t *testing.T, s *sys, f *fakeGitHub) {
	t.Helper()
	evs := events(t, s)
	if len(evs) != 2 {
		t.Fatalf("want 2 events, got %d", len(evs))
	}
	byMarker := map[string][]fakeIssue{}
	for _, iss := range f.issueList() {
		for _, ev := range evs {
			if strings.Contains(iss.Body, ghissue.EventMarker(ev.Fingerprint)) {
				byMarker[ev.Fingerprint] = append(byMarker[ev.Fingerprint], iss)
			}
		}
	}
	for _, ev := range evs {
		got := byMarker[ev.Fingerprint]
		if len(got) != 1 {
			t.Fatalf("event %d: want exactly 1 issue, got %d", ev.ID, len(got))
		}
		iss := got[0]
		if ev.IssueNumber != iss.Number || !strings.HasSuffix(ev.IssueURL, fmt.Sprintf("/issues/%d", iss.Number)) {
			t.Errorf("event %d: mapping %d %q, issue %d", ev.ID, ev.IssueNumber, ev.IssueURL, iss.Number)
		}
		if !strings.Contains(iss.Body, "`"+ev.Fingerprint+"`") {
			t.Errorf("event %d: fingerprint not visible in the body", ev.ID)
		}
		for _, l := range []string{"driftprobe", "policy_change", "sim", "llm-drift", "team:platform"} {
			if !contains(iss.Labels, l) {
				t.Errorf("event %d: label %q missing from %v", ev.ID, l, iss.Labels)
			}
		}
		markers := map[string]int{}
		for _, c := range f.commentsOf(iss.Number) {
			for _, u := range ev.Updates {
				if strings.Contains(c.Body, ghissue.UpdateMarker(ev, u)) {
					markers[ghissue.UpdateMarker(ev, u)]++
				}
			}
		}
		for _, u := range ev.Updates {
			want := 1
			if u.Change == diff.ChangeOpened {
				want = 0
			}
			if n := markers[ghissue.UpdateMarker(ev, u)]; n != want {
				t.Errorf("event %d update %d (%s): %d comments, want %d", ev.ID, u.ID, u.Change, n, want)
			}
		}
		if ev.Status == "reverted" {
			if iss.State != "closed" || iss.StateReason != "completed" {
				t.Errorf("event %d reverted: issue state %s/%s, want closed/completed", ev.ID, iss.State, iss.StateReason)
			}
		} else if iss.State != "open" {
			t.Errorf("event %d open: issue state %s", ev.ID, iss.State)
		}
	}
	if p := pending(t, s); len(p) != 0 {
		t.Errorf("outbox not empty: %+v", p)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// dumpDB renders every row of every table.
func dumpDB(t *testing.T, st *storage.DB) string {
	t.Helper()
	ctx := context.Background()
	rows, err := st.SQL().QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, tb := range tables {
		r, err := st.SQL().QueryContext(ctx, `SELECT * FROM "`+tb+`"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := r.Columns()
		for r.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := r.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					b.Write(bs)
				} else {
					fmt.Fprint(&b, v)
				}
				b.WriteByte('\t')
			}
			b.WriteByte('\n')
		}
		r.Close()
	}
	return b.String()
}

func assertNoToken(t *testing.T, s *sys, f *fakeGitHub, logs string) {
	t.Helper()
	assertNoSecret(t, s, f, logs, "token", testToken)
}

// assertNoSecret checks that secret is in no request body, query or path
// (so in no issue or comment), in no log line and nowhere in the database.
func assertNoSecret(t *testing.T, s *sys, f *fakeGitHub, logs, what, secret string) {
	t.Helper()
	assertNoSecrets(t, s, f, logs, []secretText{{what, secret}})
}

// secretText is a secret a test checks for, and what to call it.
type secretText struct{ what, secret string }

// assertNoSecrets is assertNoSecret for several secrets over one dump of
// the database (a dump per secret made the app-auth tests' 30-odd key
// lines cost a minute under -race).
func assertNoSecrets(t *testing.T, s *sys, f *fakeGitHub, logs string, secrets []secretText) {
	t.Helper()
	reqs, db := f.requests(), dumpDB(t, s.st)
	for _, sc := range secrets {
		for _, r := range reqs {
			if strings.Contains(r.Body, sc.secret) || strings.Contains(r.Query, sc.secret) || strings.Contains(r.Path, sc.secret) {
				t.Errorf("%s in request %s %s", sc.what, r.Method, r.Path)
			}
		}
		if strings.Contains(logs, sc.secret) {
			t.Errorf("%s in logs", sc.what)
		}
		if strings.Contains(db, sc.secret) {
			t.Errorf("%s in the database", sc.what)
		}
	}
}

// TestOneIssuePerEventAcrossRunsRestartsAndLostMappings runs the sim
// through detection with delivery after every run (as run and serve do),
// restarts the process, deletes mappings and finally forgets every
// delivery: GitHub still ends with exactly one issue per event and one
// comment per update.
func TestOneIssuePerEventAcrossRunsRestartsAndLostMappings(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	// Unrelated issues, some with the label, so the marker lookup pages.
	f.issues = append(f.issues,
		&fakeIssue{Number: 1, Title: "human issue", Body: "hello", State: "open", Labels: []string{"driftprobe"}},
		&fakeIssue{Number: 2, Title: "other", Body: "<!-- driftprobe:event=0000deadbeef -->", State: "closed", Labels: []string{"driftprobe"}},
		&fakeIssue{Number: 3, Title: "unlabelled", Body: "x", State: "open"},
	)
	db := filepath.Join(t.TempDir(), "test.db")
	s := newSys(t, db, f.BaseURL())
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	totalSent := 0
	for run := 1; run <= totalRuns; run++ {
		s.run()
		switch run {
		case 5: // restart: a new process on the same database
			s.close()
			s.open()
		case 6: // the mapping row is lost
			if _, err := s.st.SQL().Exec(`UPDATE events SET issue_number = 0, issue_url = '' WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
		case 7: // a human comments: comment listing now pages
			f.mu.Lock()
			for i := 0; i < 3; i++ {
				f.comments[4] = append(f.comments[4], &fakeComment{ID: int64(i + 1), Body: "looking into it @someone"})
			}
			f.mu.Unlock()
		}
		for i := 0; i < 5; i++ { // repeated deliveries change nothing
			sent, err := ghissue.AfterRun(ctx, s.st, s.cfg, log, nil)
			if err != nil {
				t.Fatalf("run %d: AfterRun: %v", run, err)
			}
			totalSent += sent
		}
		if n := len(f.issueList()) - 3; n != len(events(t, s)) {
			t.Fatalf("after run %d: %d issues for %d events", run, n, len(events(t, s)))
		}
	}
	if totalSent != 4 {
		t.Errorf("sent %d outbox rows, want 4 (2 opens, 1 comment, 1 revert)", totalSent)
	}
	checkDelivered(t, s, f)

	// Everything forgotten: mappings and sent marks (a restore from an old
	// backup). Markers find the issues and comments again.
	if _, err := s.st.SQL().Exec(`UPDATE events SET issue_number = 0, issue_url = ''; UPDATE outbox SET sent_at = '', attempts = 0`); err != nil {
		t.Fatal(err)
	}
	before := len(f.requests())
	for i := 0; i < 5; i++ {
		if _, err := ghissue.AfterRun(ctx, s.st, s.cfg, log, nil); err != nil {
			t.Fatal(err)
		}
	}
	checkDelivered(t, s, f)
	for _, r := range f.requests()[before:] {
		if r.Method == http.MethodPost {
			t.Errorf("redelivery after a lost state posted %s", r.Path)
		}
	}
	// Issue opened before its comments.
	var order []string
	for _, r := range f.requests() {
		if r.Method == http.MethodPost {
			order = append(order, r.Path)
		}
	}
	if len(order) != 4 || !strings.HasSuffix(order[0], "/issues") || !strings.HasSuffix(order[1], "/issues") ||
		!strings.HasSuffix(order[2], "/comments") || !strings.HasSuffix(order[3], "/comments") {
		t.Errorf("POST order: %v", order)
	}
	for _, r := range f.requests() {
		if r.Auth != "Bearer "+testToken {
			t.Fatalf("request without the token: %s %s", r.Method, r.Path)
		}
	}
	var pagedIssues, pagedComments bool
	for _, r := range f.requests() {
		if r.Method == http.MethodGet && strings.Contains(r.Query, "page=2") {
			pagedIssues = pagedIssues || strings.HasSuffix(r.Path, "/issues")
			pagedComments = pagedComments || strings.HasSuffix(r.Path, "/comments")
		}
		// The label listing, or the bounded one of the issues created
		// since a row was queued (labelled or not).
		if r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/issues") && (!strings.Contains(r.Query, "state=all") ||
			(!strings.Contains(r.Query, "labels=driftprobe") && (!strings.Contains(r.Query, "since=") || !strings.Contains(r.Query, "sort=created")))) {
			t.Errorf("issue listing without state=all&labels=driftprobe, nor state=all&since=…&sort=created: %s", r.Query)
		}
	}
	if !pagedIssues || !pagedComments {
		t.Errorf("Link pagination not exercised: issues %v, comments %v", pagedIssues, pagedComments)
	}
	assertNoToken(t, s, f, logs.String())
	if !strings.Contains(logs.String(), "github issue opened") {
		t.Errorf("no log line for the opened issue:\n%s", logs.String())
	}
}

// TestOutageThenRecovery: 5xx answers, a created issue whose answer was
// lost, and a comment whose answer timed out; each event is delivered
// once, nothing is attempted before its next_attempt_at.
func TestOutageThenRecovery(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	tt := &timeoutTransport{inner: http.DefaultTransport}
	opts := ghissue.Options{HTTPClient: &http.Client{Transport: tt}}

	// Three 503s across three passes, then a 502 after the server created
	// the issue.
	for i := 0; i < 3; i++ {
		f.addFault(outage(503))
	}
	f.addFault(fault{match: func(r *http.Request) bool { return r.Method == http.MethodPost }, after: true, status: 502, body: `{"message":"Bad Gateway"}`})

	waits := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute}
	for i, w := range waits {
		n := len(f.requests())
		res := deliver(t, s, c, opts)
		if res.Failed != 1 || res.Sent != 0 || len(f.requests()) != n+1 {
			t.Fatalf("pass %d: %+v, %d requests", i, res, len(f.requests())-n)
		}
		p := pending(t, s)
		if p[0].Attempts != i+1 || p[0].NextAttemptAt == nil || !p[0].NextAttemptAt.Equal(c.Now().Add(w)) {
			t.Fatalf("pass %d: row %+v, want next attempt at now+%s", i, p[0], w)
		}
		if !strings.Contains(p[0].LastError, "GitHub unavailable (503") {
			t.Errorf("last_error %q", p[0].LastError)
		}
		for _, x := range p[1:] {
			if x.NextAttemptAt == nil || x.NextAttemptAt.Before(*p[0].NextAttemptAt) {
				t.Errorf("pass %d: row %d not deferred: %+v", i, x.ID, x)
			}
		}
		// Nothing is attempted before the wait is over.
		c.Advance(w - time.Second)
		n = len(f.requests())
		if res := deliver(t, s, c, opts); res.Sent+res.Failed != 0 || len(f.requests()) != n {
			t.Fatalf("pass %d: attempted before next_attempt_at: %+v", i, res)
		}
		c.Advance(time.Second)
	}
	// The create goes through on the server but the answer is lost.
	res := deliver(t, s, c, opts)
	if res.Failed != 1 || len(f.issueList()) != 1 {
		t.Fatalf("lost answer: %+v, %d issues", res, len(f.issueList()))
	}
	if evs := events(t, s); evs[0].IssueNumber != 0 {
		t.Fatalf("mapping recorded although the answer was lost")
	}
	c.Advance(time.Hour)
	// Next pass: the issue is adopted by its marker; event 2's issue is
	// created; event 1's comment is posted but its answer times out.
	f.addFault(fault{match: func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments")
	}, after: true, status: 504, body: `{"message":"timeout"}`})
	res = deliver(t, s, c, opts)
	if res.Sent != 2 || res.Failed != 1 {
		t.Fatalf("recovery pass: %+v", res)
	}
	if len(f.issueList()) != 2 {
		t.Fatalf("want 2 issues, got %d", len(f.issueList()))
	}
	c.Advance(time.Hour)
	// A transport-level timeout (no HTTP answer at all) on the next call,
	// after the server processed it.
	tt.mu.Lock()
	tt.next = []bool{true}
	tt.mu.Unlock()
	res = deliver(t, s, c, opts)
	if res.Failed != 1 {
		t.Fatalf("timeout pass: %+v", res)
	}
	if p := pending(t, s); len(p) == 0 || !strings.Contains(p[0].LastError, "timed out") {
		t.Fatalf("want a timeout error recorded, got %+v", p)
	}
	c.Advance(time.Hour)
	res = deliver(t, s, c, opts)
	if res.Failed != 0 {
		t.Fatalf("final pass: %+v", res)
	}
	checkDelivered(t, s, f)
	assertNoToken(t, s, f, "")
}

// TestPrimaryRateLimit: 403 with x-ratelimit-remaining: 0 defers every
// row until x-ratelimit-reset; nothing is sent before, everything after.
func TestPrimaryRateLimit(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	// The first row's calls succeed (the marker lookups, the create), then
	// the limit hits the next call.
	reset := c.Now().Add(37 * time.Minute)
	var created bool
	f.addFault(func() fault {
		ft := primaryRateLimit(reset)
		ft.match = func(r *http.Request) bool {
			if created {
				return true
			}
			created = r.Method == http.MethodPost
			return false
		}
		return ft
	}())
	res := deliver(t, s, c, ghissue.Options{})
	if res.Sent != 1 || res.Failed != 1 {
		t.Fatalf("%+v", res)
	}
	for _, p := range pending(t, s) {
		if p.NextAttemptAt == nil || !p.NextAttemptAt.Equal(reset) {
			t.Errorf("row %d: next attempt %v, want %v", p.ID, p.NextAttemptAt, reset)
		}
		if !strings.Contains(p.Reason, "primary rate limit") {
			t.Errorf("row %d: reason %q", p.ID, p.Reason)
		}
	}
	n := len(f.requests())
	c.Advance(37*time.Minute - time.Second)
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent+res.Failed != 0 || len(f.requests()) != n {
		t.Fatalf("sent before the reset: %+v", res)
	}
	c.Advance(time.Second)
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 3 || res.Failed != 0 {
		t.Fatalf("after the reset: %+v", res)
	}
	checkDelivered(t, s, f)
}

// TestSecondaryRateLimit: 403 and 429 with retry-after (GitHub's secondary
// limit) wait exactly that long.
func TestSecondaryRateLimit(t *testing.T) {
	for _, status := range []int{403, 429} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			s := fixture(t, f.BaseURL())
			c := newClock()
			ft := secondaryRateLimit(status, 90)
			ft.match = func(r *http.Request) bool { return r.Method == http.MethodPost }
			f.addFault(ft)
			res := deliver(t, s, c, ghissue.Options{})
			if res.Failed != 1 || res.Sent != 0 {
				t.Fatalf("%+v", res)
			}
			want := c.Now().Add(90 * time.Second)
			for _, p := range pending(t, s) {
				if p.NextAttemptAt == nil || !p.NextAttemptAt.Equal(want) {
					t.Errorf("row %d: next attempt %v, want %v", p.ID, p.NextAttemptAt, want)
				}
				if !strings.Contains(p.Reason, "secondary rate limit") {
					t.Errorf("row %d: reason %q", p.ID, p.Reason)
				}
			}
			n := len(f.requests())
			c.Advance(89 * time.Second)
			if res := deliver(t, s, c, ghissue.Options{}); res.Sent+res.Failed != 0 || len(f.requests()) != n {
				t.Fatalf("sent during retry-after: %+v", res)
			}
			c.Advance(time.Second)
			if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 4 {
				t.Fatalf("after retry-after: %+v", res)
			}
			checkDelivered(t, s, f)
		})
	}
}

// TestConfigurationErrors: a missing token, an unknown repository, a bad
// token and a token without permission are recorded with a clear message
// on every pending row; the events stay queued and are delivered once
// the problem is fixed.
func TestConfigurationErrors(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	check := func(name string, o ghissue.Options, want string) {
		t.Helper()
		o.Logger = log
		expectAllQueued(t, s, c, o, name, want)
	}
	n := len(f.requests())
	check("missing token", ghissue.Options{Getenv: func(string) string { return "" }}, "environment variable DRIFTPROBE_TEST_GH_TOKEN (github.token_env) is not set")
	if len(f.requests()) != n {
		t.Fatal("requests sent without a token")
	}
	// AfterRun: the run completes (nil error) with the token missing.
	t.Setenv(tokenEnv, "")
	if sent, err := ghissue.AfterRun(context.Background(), s.st, s.cfg, log, nil); sent != 0 || err != nil {
		t.Fatalf("AfterRun without a token: %d, %v", sent, err)
	}

	check("bad token", ghissue.Options{Getenv: func(string) string { return "ghp_wrong" }}, "rejected the token in $DRIFTPROBE_TEST_GH_TOKEN (401")

	s.cfg.GitHub.Repo = "acme/nope"
	check("unknown repo", ghissue.Options{}, "repository acme/nope not found")
	s.cfg.GitHub.Repo = "acme/llm-drift"

	f.addFault(fault{status: 403, body: `{"message":"Resource not accessible by personal access token","documentation_url":"https://docs.github.com/rest/issues/issues#create-an-issue"}`,
		match: func(r *http.Request) bool { return r.Method == http.MethodPost }})
	check("no permission", ghissue.Options{}, "has no permission on acme/llm-drift (403 Resource not accessible")

	// Fixed: delivered exactly once (config errors retry on the next call).
	if res := deliver(t, s, c, ghissue.Options{Logger: log}); res.Sent != 4 {
		t.Fatalf("after the fix: %+v", res)
	}
	checkDelivered(t, s, f)
	assertNoToken(t, s, f, logs.String())
	if strings.Contains(logs.String(), "ghp_wrong") || strings.Contains(dumpDB(t, s.st), "ghp_wrong") {
		t.Error("the wrong token leaked")
	}
}

// TestDeletedIssueIsReopened: a 410 on an issue driftprobe mapped clears
// the mapping; the next attempt opens a fresh issue (no marker left).
func TestDeletedIssueIsReopened(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	// Deliver only the opens: hold the comment rows back with a far wait.
	deliverOpensOnly(t, s, c)
	// The issue of event 1 is deleted on GitHub.
	f.mu.Lock()
	f.issues[0].Body, f.issues[0].Labels = "deleted", nil
	f.mu.Unlock()
	f.addFault(fault{status: 410, body: `{"message":"This issue was deleted"}`, match: func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/issues/1/") }})
	if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 1 {
		t.Fatalf("%+v", res)
	}
	if evs := events(t, s); evs[0].IssueNumber != 0 {
		t.Fatalf("mapping kept for a deleted issue")
	}
	c.Advance(time.Hour)
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 2 {
		t.Fatalf("%+v", res)
	}
	if evs := events(t, s); evs[0].IssueNumber != 3 {
		t.Fatalf("event 1 now on issue %d, want a new issue #3", evs[0].IssueNumber)
	}
}

// TestDryRun renders without calling GitHub or marking anything sent.
func TestDryRun(t *testing.T) {
	s := fixture(t, "http://127.0.0.1:1/")
	c := newClock()
	var out bytes.Buffer
	dir := t.TempDir()
	res := deliver(t, s, c, ghissue.Options{DryRun: &out})
	if res.Rendered != 4 || res.Sent != 0 {
		t.Fatalf("%+v", res)
	}
	res = deliver(t, s, c, ghissue.Options{DryRunDir: dir})
	if res.Rendered != 4 {
		t.Fatalf("%+v", res)
	}
	if len(pending(t, s)) != 4 {
		t.Fatal("dry run marked rows sent")
	}
	text := out.String()
	for _, want := range []string{"would open an issue in acme/llm-drift for event 1", "Provider policy change on sim-prod",
		"would comment on and close (state_reason completed)", "driftprobe diff --target sim-prod --from 2 --to 4", "driftprobe events --json",
		"title (edited if it differs): \"Provider policy change on sim-prod: ", " [reverted]\"\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run output lacks %q", want)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	if len(files) != 4 {
		t.Errorf("want 4 files, got %v", files)
	}
	// Without a github block: RenderEvents over every event.
	out.Reset()
	n, err := ghissue.RenderEvents(context.Background(), s.st, nil, events(t, s), 0, &out, "")
	if err != nil || n != 4 || !strings.Contains(out.String(), "(no github block)") {
		t.Fatalf("RenderEvents: %d %v", n, err)
	}
	// AfterRun without a github block only renders, never fails.
	s.cfg.GitHub = nil
	if sent, err := ghissue.AfterRun(context.Background(), s.st, s.cfg, nil, io.Discard); sent != 0 || err != nil {
		t.Fatalf("AfterRun: %d %v", sent, err)
	}
}

// expectAllQueued delivers once and asserts nothing was sent and every one
// of the 4 pending rows records want as its error and reason.
func expectAllQueued(t *testing.T, s *sys, c *clock, o ghissue.Options, name, want string) {
	t.Helper()
	res := deliver(t, s, c, o)
	if res.Sent != 0 {
		t.Fatalf("%s: sent %d", name, res.Sent)
	}
	p := pending(t, s)
	if len(p) != 4 {
		t.Fatalf("%s: %d pending, want 4", name, len(p))
	}
	for _, x := range p {
		if !strings.Contains(x.LastError, want) || !strings.Contains(x.Reason, want) {
			t.Errorf("%s: row %d: last_error %q reason %q, want %q", name, x.ID, x.LastError, x.Reason, want)
		}
	}
}

// TestRetryCountsFromTheFailure: the next attempt after a failed call
// counts from when the call failed (the injected clock then), not from
// the start of the pass: a create that times out after 30s waits the
// full backoff (1 minute) after the timeout; a secondary limit answered
// after 30s waits its retry-after from the answer.
func TestRetryCountsFromTheFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
		ft   *fault // the answer, or nil: a network timeout
	}{
		{"timeout", time.Minute, nil},
		{"secondary rate limit", 90 * time.Second, func() *fault { ft := secondaryRateLimit(429, 90); return &ft }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGitHub(t, "acme", "llm-drift", testToken)
			s := fixture(t, f.BaseURL())
			c := newClock()
			start := c.Now()
			slow := true
			hook := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
				if !isCreate(r) || !slow {
					return nil
				}
				slow = false
				c.Advance(30 * time.Second) // the call takes 30s
				if tc.ft == nil {
					return &net.OpError{Op: "read", Net: "tcp", Err: netTimeout{}}
				}
				return nil
			}}
			if tc.ft != nil {
				ft := *tc.ft
				ft.match = isCreate
				f.addFault(ft)
			}
			opts := ghissue.Options{HTTPClient: &http.Client{Transport: hook}}
			if res := deliver(t, s, c, opts); res.Failed != 1 {
				t.Fatalf("%+v", res)
			}
			want := start.Add(30 * time.Second).Add(tc.wait)
			for _, p := range pending(t, s) {
				if p.NextAttemptAt == nil || !p.NextAttemptAt.Equal(want) {
					t.Errorf("row %d: next attempt %v, want %v (30s call + %s): %s", p.ID, p.NextAttemptAt, want, tc.wait, p.LastError)
				}
			}
			n := len(f.requests())
			c.Advance(tc.wait - time.Second)
			if res := deliver(t, s, c, opts); res.Sent+res.Failed != 0 || len(f.requests()) != n {
				t.Fatalf("attempted before the wait after the failure was over: %+v", res)
			}
			c.Advance(time.Second)
			if res := deliver(t, s, c, opts); res.Sent != 4 {
				t.Fatalf("after the wait: %+v", res)
			}
			checkDelivered(t, s, f)
		})
	}
}

// TestClaimCountsFromTheClaim: a row's claim runs ClaimFor from when it is
// claimed. After a slow failing call (11 minutes, beyond the 10-minute
// claim) earlier in the pass, another process delivering while the next
// row's create is in flight must see that row claimed and leave it: one
// issue per event.
func TestClaimCountsFromTheClaim(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	// Event 1's create is refused (422: not global, the pass goes on to
	// event 2) after 11 minutes.
	f.addFault(fault{match: isCreate, status: 422, body: `{"message":"Validation Failed"}`})
	creates := 0
	var other *ghissue.Result
	hook := &hookTransport{inner: http.DefaultTransport, before: func(r *http.Request) error {
		if !isCreate(r) {
			return nil
		}
		creates++
		switch creates {
		case 1:
			c.Advance(11 * time.Minute)
		case 2: // event 2's create is in flight: another process delivers
			var err error
			if other, err = ghissue.Deliver(context.Background(), s.st, s.cfg, ghissue.Options{Now: c.Now, Getenv: env}); err != nil {
				t.Errorf("other process: %v", err)
			}
		}
		return nil
	}}
	res := deliver(t, s, c, ghissue.Options{HTTPClient: &http.Client{Transport: hook}})
	if res.Failed != 1 || res.Sent != 1 {
		t.Fatalf("%+v", res)
	}
	if other == nil || other.Sent != 0 {
		t.Errorf("the other process delivered while the row was claimed: %+v", other)
	}
	ev2 := events(t, s)[1]
	n := 0
	for _, iss := range f.issueList() {
		if strings.Contains(iss.Body, ghissue.EventMarker(ev2.Fingerprint)) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("event 2: %d issues, want 1", n)
	}
}

// TestLostCreateWithoutLabelIsFoundAgain: GitHub drops the labels of a new
// issue when the caller lacks push access (the token needs only Issues
// read/write). A create that succeeded on GitHub but whose answer was
// lost (502) is found again by its marker among the issues created since
// the row was queued, labelled or not, instead of opened a second time.
// A human issue quoting the marker later, and an older issue carrying it,
// are not mistaken for it. The first attempt (the common case) lists only
// the labelled issues.
func TestLostCreateWithoutLabelIsFoundAgain(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	f.now, f.dropLabels = c.Now, true
	evs := events(t, s)
	marker := ghissue.EventMarker(evs[0].Fingerprint)
	// An issue opened two days ago, recently updated, carrying event 1's
	// marker (a pasted dry run, say): older than the outbox row, so never
	// the issue an attempt created.
	f.issues = append(f.issues, &fakeIssue{Number: 1, Title: "pasted dry run", Body: marker + "\nwhat driftprobe would file", State: "open",
		CreatedAt: c.Now().Add(-48 * time.Hour), UpdatedAt: c.Now()})
	f.addFault(fault{match: isCreate, after: true, status: 502, body: `{"message":"Bad Gateway"}`})

	res := deliver(t, s, c, ghissue.Options{})
	if res.Failed != 1 || len(f.issueList()) != 2 {
		t.Fatalf("lost answer: %+v, %d issues", res, len(f.issueList()))
	}
	ours := f.issueList()[1]
	if len(ours.Labels) != 0 || !strings.Contains(ours.Body, marker) {
		t.Fatalf("the created issue: labels %v", ours.Labels)
	}
	// The first attempt looks beyond the labelled issues only among those
	// created since the row was queued (a restored database's mapping
	// lost with the labels), once for the pass.
	var since []string
	for _, r := range f.requests() {
		if r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/issues") && !strings.Contains(r.Query, "labels=driftprobe") {
			if !strings.Contains(r.Query, "since=") || !strings.Contains(r.Query, "state=all") {
				t.Errorf("first attempt listed issues without the label, unbounded: %s", r.Query)
			}
			if !strings.Contains("&"+r.Query, "&page=") { // a listing's first page
				since = append(since, r.Query)
			}
		}
	}
	if len(since) > 1 {
		t.Errorf("first attempt listed the recent issues %d times, want at most once: %q", len(since), since)
	}
	// Later, a human quotes the marker in a new issue of their own.
	c.Advance(10 * time.Minute)
	f.mu.Lock()
	f.issues = append(f.issues, &fakeIssue{Number: 3, Title: "about #2", Body: "driftprobe's marker was " + marker + ", see #2", State: "open",
		CreatedAt: c.Now(), UpdatedAt: c.Now()})
	f.mu.Unlock()
	c.Advance(time.Hour)

	n := len(f.requests())
	if res := deliver(t, s, c, ghissue.Options{}); res.Sent != 4 || res.Failed != 0 {
		t.Fatalf("retry: %+v", res)
	}
	evs = events(t, s)
	if evs[0].IssueNumber != ours.Number {
		t.Errorf("event 1 mapped to issue #%d, want #%d (the one the lost attempt created)", evs[0].IssueNumber, ours.Number)
	}
	for _, ev := range evs {
		k := 0
		for _, iss := range f.issueList() {
			if iss.Title == ghissue.Title(ev) {
				k++
			}
		}
		if k != 1 {
			t.Errorf("event %d: %d issues, want 1", ev.ID, k)
		}
	}
	if len(f.commentsOf(1)) != 0 || len(f.commentsOf(3)) != 0 || len(f.commentsOf(ours.Number)) != 2 {
		t.Errorf("comments on #1, #3, #%d: %d, %d, %d; want 0, 0, 2", ours.Number, len(f.commentsOf(1)), len(f.commentsOf(3)), len(f.commentsOf(ours.Number)))
	}
	unlabelled := false
	for _, r := range f.requests()[n:] {
		if r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/issues") && !strings.Contains(r.Query, "labels=") {
			unlabelled = true
			if !strings.Contains(r.Query, "since=") || !strings.Contains(r.Query, "state=all") {
				t.Errorf("unlabelled listing without since and state=all: %s", r.Query)
			}
		}
	}
	if !unlabelled {
		t.Error("the retry did not look beyond the labelled issues")
	}
	if p := pending(t, s); len(p) != 0 {
		t.Errorf("pending: %+v", p)
	}
}

// TestStrangerMarkersDoNotSilenceUpdates: anyone can comment on a public
// repository, and update markers are sequential, so easy to guess. A
// stranger's comment carrying the markers of updates yet to come (hidden
// in a friendly comment, or at its very start) must not make driftprobe
// believe it already posted them: every update is still commented, once,
// by driftprobe.
func TestStrangerMarkersDoNotSilenceUpdates(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := newSys(t, filepath.Join(t.TempDir(), "test.db"), f.BaseURL())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var all strings.Builder
	for id := 1; id < 200; id++ {
		all.WriteString(ghissue.LegacyUpdateMarker(int64(id)) + "\n")
	}
	seeded := map[int]bool{}
	for run := 1; run <= totalRuns; run++ {
		s.run()
		if _, err := ghissue.AfterRun(context.Background(), s.st, s.cfg, log, nil); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		f.mu.Lock()
		for _, iss := range f.issues {
			if !seeded[iss.Number] {
				seeded[iss.Number] = true
				f.nextCID++
				f.comments[iss.Number] = append(f.comments[iss.Number],
					&fakeComment{ID: f.nextCID, Body: "Thanks for the report, looking into it.\n" + all.String(), User: &fakeUser{Login: "mallory"}})
				f.nextCID++
				f.comments[iss.Number] = append(f.comments[iss.Number],
					&fakeComment{ID: f.nextCID, Body: all.String(), User: &fakeUser{Login: "mallory"}})
			}
		}
		f.mu.Unlock()
	}
	evs := events(t, s)
	updates := 0
	for _, ev := range evs {
		for _, u := range ev.Updates {
			if u.Change == diff.ChangeOpened {
				continue
			}
			updates++
			n := 0
			for _, c := range f.commentsOf(ev.IssueNumber) {
				if c.User != nil && c.User.Login == fakeBot && strings.HasPrefix(c.Body, ghissue.UpdateMarker(ev, u)) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("event %d update %d (%s): %d comments by driftprobe, want 1", ev.ID, u.ID, u.Change, n)
			}
		}
	}
	if updates == 0 {
		t.Fatal("the scenario made no updates to comment on")
	}
}

// TestOwnCommentAfterLoginSwitch: issues a token of one user opened, then
// delivery switched to another login (a new token, a GitHub App). A
// comment the new login posted whose answer was lost is recognised as
// driftprobe's own (GitHub says who the client is), not posted again,
// though its author is not the issue's.
func TestOwnCommentAfterLoginSwitch(t *testing.T) {
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	opts := ghissue.Options{}
	f.login = "alice"
	comments := func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments")
	}
	f.addFault(fault{match: comments, status: 503, body: `{"message":"unavailable"}`})
	deliver(t, s, c, opts)
	if len(f.issueList()) == 0 || len(pending(t, s)) == 0 {
		t.Fatalf("want issues opened and a comment pending: %d issues, %+v", len(f.issueList()), pending(t, s))
	}
	f.mu.Lock()
	f.login = fakeBot
	f.mu.Unlock()
	c.Advance(time.Hour)
	f.addFault(fault{match: comments, after: true, status: 502, body: `{"message":"Bad Gateway"}`})
	deliver(t, s, c, opts)
	for i := 0; i < 3; i++ {
		c.Advance(time.Hour)
		deliver(t, s, c, opts)
	}
	if p := pending(t, s); len(p) != 0 {
		t.Fatalf("rows still pending: %+v", p)
	}
	for _, iss := range f.issueList() {
		markers := map[string]int{}
		for _, cm := range f.commentsOf(iss.Number) {
			if m := strings.SplitN(cm.Body, "\n", 2)[0]; strings.HasPrefix(m, "<!-- driftprobe:update=") {
				markers[m]++
			}
		}
		for m, n := range markers {
			if n != 1 {
				t.Errorf("issue %d: %s posted %d times", iss.Number, m, n)
			}
		}
	}
}

// TestIssueURLIsAPlainWebAddress: the issue address GitHub answers with
// (html_url) is stored only when it is a plain http(s) URL: `driftprobe
// events` and `run` print it as it is ("  issue: URL"), so a GitHub
// (Enterprise server, proxy) that answers with escape sequences in it
// would reach the operator's terminal (OSC 52 writes the clipboard).
// Anything else is stored as the address built from github.base_url and
// the issue number; a plain html_url (the other event's) is kept.
func TestIssueURLIsAPlainWebAddress(t *testing.T) {
	for _, hostile := range []string{
		"https://github.example/acme/llm-drift/issues/1\x1b]52;c;ZXZpbA==\x07\x1b[2J",
		"javascript:alert(1)//https://github.example/acme/llm-drift/issues/1",
		"https://github.example/acme/llm-drift/issues/1 \u202eevil",
		"",
	} {
		f := newFakeGitHub(t, "acme", "llm-drift", testToken)
		f.addFault(fault{
			match: func(r *http.Request) bool {
				return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/repos/acme/llm-drift/issues")
			},
			after:  true,
			status: http.StatusCreated,
			bodyFn: func([]fakeReq) string {
				b, _ := json.Marshal(map[string]any{"number": 1, "title": "t", "body": "", "state": "open", "html_url": hostile, "labels": []any{}})
				return string(b)
			},
		})
		s := fixture(t, f.BaseURL())
		deliver(t, s, newClock(), ghissue.Options{})
		var out bytes.Buffer
		evs := events(t, s)
		app.WriteEvents(&out, evs, nil)
		if strings.ContainsRune(out.String(), '\x1b') {
			t.Fatalf("events output carries GitHub's escape sequences: %q", out.String()[strings.IndexByte(out.String(), '\x1b')-60:])
		}
		want := map[int]string{1: f.BaseURL() + "acme/llm-drift/issues/1", 2: f.BaseURL() + "acme/llm-drift/issues/2"}
		for _, ev := range evs {
			if ev.IssueURL != want[ev.IssueNumber] {
				t.Errorf("html_url %q: event %d, issue %d stored as %q, want %q", hostile, ev.ID, ev.IssueNumber, ev.IssueURL, want[ev.IssueNumber])
			}
		}
	}
}
