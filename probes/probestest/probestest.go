// Package probestest is the conformance harness every provider adapter is
// tested with: recorded provider bodies replayed by an httptest server on
// loopback, golden files pinning exact request bytes, and a cross-process
// check that rendering is byte-stable.
package probestest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Case is one recorded response and what the adapter must read from it.
type Case struct {
	Name    string
	Fixture string            // file under testdata/ holding the body (raw bytes)
	Body    string            // inline body when Fixture is empty
	Status  int               // default 200
	Header  map[string]string // response headers
	Want    Want
}

// Want is the expected reading of a Case. Zero fields are not checked,
// except Class (always) and Categories (nil means "none fired").
type Want struct {
	Class             probes.Class
	Stage             probes.Stage
	Categories        []string           // normalized fired categories
	Raw               []string           // raw names of fired signals (subset check)
	Scores            map[string]float64 // raw name -> score (subset check)
	Severities        map[string]string  // raw name -> severity (subset check)
	RequestID         string
	ModelID           string
	ModelFP           string
	Reason            string
	Heuristic         bool
	RetryAfter        time.Duration
	TokensIn          int
	TokensOut         int
	Unknown           []string // each must appear in Result.Unknown
	NoCheckCategories bool
}

// Captured is what the fake server received.
type Captured struct {
	Method string
	Path   string // path?query
	Header http.Header
	Body   []byte
}

// Replay serves each request with the given status, headers and body and
// records what it received.
type Replay struct {
	*httptest.Server
	mu   sync.Mutex
	last Captured
	n    int
}

// NewReplay starts a loopback server answering every request with c.
func NewReplay(t testing.TB, c Case) *Replay {
	t.Helper()
	body := []byte(c.Body)
	if c.Fixture != "" {
		var err error
		body, err = os.ReadFile(filepath.Join("testdata", c.Fixture))
		if err != nil {
			t.Fatalf("fixture: %v", err)
		}
	}
	status := c.Status
	if status == 0 {
		status = 200
	}
	r := &Replay{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.last = Captured{req.Method, req.URL.RequestURI(), req.Header.Clone(), b}
		r.n++
		r.mu.Unlock()
		for k, v := range c.Header {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		w.Write(body)
	}))
	t.Cleanup(r.Close)
	return r
}

// Last returns the last request received.
func (r *Replay) Last() Captured {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Requests returns how many requests the server has received.
func (r *Replay) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Do renders p with pr, sends it over real HTTP (authorizing as the runner
// does) and classifies the answer.
func Do(t testing.TB, pr probes.Prober, p probes.Probe) (*probes.Request, probes.Result) {
	t.Helper()
	req, err := pr.Render(p)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	hr, err := http.NewRequestWithContext(context.Background(), req.Method, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	for k, v := range req.Header {
		hr.Header[k] = v
	}
	if a, ok := pr.(probes.Authorizer); ok {
		if err := a.Authorize(context.Background(), hr); err != nil {
			t.Fatalf("authorize: %v", err)
		}
	}
	resp := &probes.Response{}
	hresp, err := http.DefaultClient.Do(hr)
	if err != nil {
		resp.Err = err
	} else {
		resp.Status, resp.Header = hresp.StatusCode, hresp.Header
		resp.Body, _ = io.ReadAll(hresp.Body)
		hresp.Body.Close()
	}
	return req, pr.Classify(req, resp)
}

// DoRetrying is Do repeated the way the runner sends: again while the
// class is retryable, at most attempts times. It returns the last result.
func DoRetrying(t testing.TB, pr probes.Prober, p probes.Probe, attempts int) probes.Result {
	t.Helper()
	var r probes.Result
	for range attempts {
		if _, r = Do(t, pr, p); !r.Class.Retryable() {
			break
		}
	}
	return r
}

// Conformance runs every case: newProber gets the replay server's base URL.
func Conformance(t *testing.T, newProber func(t *testing.T, baseURL string) probes.Prober, p probes.Probe, cases []Case) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			srv := NewReplay(t, c)
			pr := newProber(t, srv.URL)
			_, got := Do(t, pr, p)
			Check(t, got, c.Want)
		})
	}
}

// Check compares a result with a Want.
func Check(t testing.TB, got probes.Result, w Want) {
	t.Helper()
	if got.Class != w.Class {
		t.Errorf("class = %q, want %q (reason %q, message %q)", got.Class, w.Class, got.Reason, got.Message)
	}
	if w.Stage != "" && got.Stage != w.Stage {
		t.Errorf("stage = %q, want %q", got.Stage, w.Stage)
	}
	if !w.NoCheckCategories && strings.Join(got.Categories, ",") != strings.Join(w.Categories, ",") {
		t.Errorf("categories = %v, want %v", got.Categories, w.Categories)
	}
	fired := map[string]probes.Signal{}
	all := map[string]probes.Signal{}
	for _, s := range got.Signals {
		all[s.Raw] = s
		if s.Fired {
			fired[s.Raw] = s
		}
	}
	for _, raw := range w.Raw {
		if _, ok := fired[raw]; !ok {
			t.Errorf("raw category %q did not fire; signals: %+v", raw, got.Signals)
		}
	}
	for raw, sc := range w.Scores {
		s, ok := all[raw]
		if !ok || !s.HasScore || s.Score < sc-1e-9 || s.Score > sc+1e-9 {
			t.Errorf("score[%s] = %+v, want %v", raw, s, sc)
		}
	}
	for raw, sev := range w.Severities {
		if s := all[raw]; s.Severity != sev {
			t.Errorf("severity[%s] = %q, want %q", raw, s.Severity, sev)
		}
	}
	for _, pair := range [][3]string{{"request id", got.RequestID, w.RequestID}, {"model id", got.ModelID, w.ModelID}, {"model fingerprint", got.ModelFP, w.ModelFP}, {"reason", got.Reason, w.Reason}} {
		if pair[2] != "" && pair[1] != pair[2] {
			t.Errorf("%s = %q, want %q", pair[0], pair[1], pair[2])
		}
	}
	if got.Heuristic != w.Heuristic {
		t.Errorf("heuristic = %v, want %v", got.Heuristic, w.Heuristic)
	}
	if w.RetryAfter != 0 && got.RetryAfter != w.RetryAfter {
		t.Errorf("retry after = %v, want %v", got.RetryAfter, w.RetryAfter)
	}
	if w.TokensIn != 0 && got.TokensIn != w.TokensIn || w.TokensOut != 0 && got.TokensOut != w.TokensOut {
		t.Errorf("tokens = %d/%d, want %d/%d", got.TokensIn, got.TokensOut, w.TokensIn, w.TokensOut)
	}
	for _, u := range w.Unknown {
		found := false
		for _, g := range got.Unknown {
			if g == u {
				found = true
			}
		}
		if !found {
			t.Errorf("unknown %q not recorded; got %v", u, got.Unknown)
		}
	}
}

// Dump renders a request as golden-file text: method and path, the
// non-secret headers sorted, the names of the pinned headers (only when
// one is present), the fingerprint, a blank line, and the body bytes.
func Dump(r *probes.Request) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s\n", r.Method, r.Path)
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(r.Header[k], ", "))
	}
	if p := r.PinnedHeaders(); p != "" {
		// The headers folded into the fingerprint, named (their values
		// are in the header lines above).
		var names []string
		for _, line := range strings.Split(strings.TrimSuffix(p, "\n"), "\n") {
			if n, _, _ := strings.Cut(line, ":"); len(names) == 0 || names[len(names)-1] != n {
				names = append(names, n)
			}
		}
		fmt.Fprintf(&b, "pinned: %s\n", strings.Join(names, ", "))
	}
	fmt.Fprintf(&b, "sha256: %s\n\n", r.SHA256())
	b.Write(r.Body)
	b.WriteByte('\n')
	return b.Bytes()
}

// Golden compares Dump(r) with testdata/golden/NAME.txt (rewritten with
// -update).
func Golden(t *testing.T, name string, r *probes.Request) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".txt")
	got := Dump(r)
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run go test -update)", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("request bytes differ from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

const childEnv = "PROBESTEST_CHILD"

// Stable asserts that render yields byte-identical requests twice in this
// process and once more in a separate process (the test binary re-run for
// this test alone), so map order, time or randomness cannot leak into the
// bytes.
func Stable(t *testing.T, render func() (*probes.Request, error)) {
	t.Helper()
	a, err := render()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(childEnv) == t.Name() {
		fmt.Printf("\nPROBESTEST_SHA=%s\n", a.SHA256())
		return
	}
	b, err := render()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Dump(a), Dump(b)) {
		t.Fatalf("two renders in one process differ:\n%s\n%s", Dump(a), Dump(b))
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`PROBESTEST_SHA=([0-9a-f]{64})`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("child printed no fingerprint:\n%s", out)
	}
	if string(m[1]) != a.SHA256() {
		t.Fatalf("request fingerprint differs across processes: %s here, %s in child", a.SHA256(), m[1])
	}
}

// Probe is a standard probe for golden files: a system and a user message
// with characters that tempt escaping (<, >, &, quotes, unicode).
var Probe = probes.Probe{ID: "golden-1", Messages: []probes.Message{
	{Role: "system", Content: "You are a careful assistant."},
	{Role: "user", Content: "Is <b>\"5 > 3\"</b> & 'true'? こんにちは"},
}}
