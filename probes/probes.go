package probes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"
)

// Message is one chat message of a probe.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Probe is what a provider needs to render one probe: its id and messages.
// The corpus package owns the richer probe record (tags, role, expectation).
type Probe struct {
	ID       string
	Messages []Message
}

// Request is a canonical, fully rendered provider request. Render must be a
// pure function of the probe and the target configuration: no timestamps,
// random ids or map-order dependence, so the same probe on the same target
// yields byte-identical requests across processes and releases.
//
// Credentials are never part of a Request; they are added to the outgoing
// *http.Request by an Authorizer after the fingerprint is taken.
type Request struct {
	Method string      // e.g. "POST"
	URL    string      // absolute URL the request is sent to
	Path   string      // path and query, part of the fingerprint
	Header http.Header // non-secret headers (content type, API version)
	Body   []byte      // exact body bytes
}

// SHA256 returns the request fingerprint: the hex SHA-256 of the method, the
// path (with query) and the body bytes, separated by newlines. Hosts and
// headers are not part of it, so the same request sent to a loopback test
// server and to the real API has the same fingerprint.
func (r *Request) SHA256() string {
	h := sha256.New()
	h.Write([]byte(r.Method))
	h.Write([]byte{'\n'})
	h.Write([]byte(r.Path))
	h.Write([]byte{'\n'})
	h.Write(r.Body)
	return hex.EncodeToString(h.Sum(nil))
}

// Response is what came back for one attempt. Err is set (and Status is 0)
// when no HTTP response was received: a timeout, a reset, a refused
// connection. Body is capped by the runner; Truncated says it was cut.
type Response struct {
	Status    int
	Header    http.Header
	Body      []byte
	Truncated bool
	Err       error
	Latency   time.Duration
}

// Result is a provider's answer read into the taxonomy.
type Result struct {
	Class      Class
	Stage      Stage
	Categories []string // normalized categories that fired, sorted and unique
	Signals    []Signal // every category signal reported, fired or not (scores)
	Reason     string   // the provider's own reason: finish reason, error type/code, block reason
	Message    string   // the provider's message, if any (untrusted text, bounded)
	Heuristic  bool     // the class was decided by a heuristic (plain-text refusal)
	RequestID  string   // provider request id (header or body)
	ModelID    string   // model id the provider says answered (e.g. dated model)
	ModelFP    string   // model/system fingerprint where given (system_fingerprint, modelVersion)
	TokensIn   int
	TokensOut  int
	RetryAfter time.Duration // the provider's requested wait (Retry-After, retry-after-ms, ...)
	Unknown    []string      // unknown enum values or new keys seen (a signal worth keeping)
}

// Prober renders and reads requests for one configured target. The runner
// owns sending, retries, rate limits and breakers; a Prober is pure
// translation and must be safe for concurrent use.
type Prober interface {
	// Render returns the canonical request for p. Equal inputs yield
	// byte-identical requests. It errors only when p cannot be expressed for
	// this provider (e.g. an unsupported role).
	Render(p Probe) (*Request, error)
	// Classify reads one attempt's response. It never panics and never fails:
	// a garbage body is classified (ClientError, Transient or
	// FilterUnavailable) with the reason recorded.
	Classify(req *Request, resp *Response) Result
}

// Authorizer is implemented by probers that add credentials or per-attempt
// headers to the outgoing request. It is called after the fingerprint is
// taken; anything it adds is never stored.
type Authorizer interface {
	Authorize(ctx context.Context, r *http.Request) error
}

// Closer is implemented by probers holding resources (the in-process sim).
type Closer interface {
	Close() error
}

type ctxKey int

const runKey ctxKey = 0

// WithRun returns a context carrying the run id being executed.
func WithRun(ctx context.Context, run int64) context.Context {
	return context.WithValue(ctx, runKey, run)
}

// RunFrom returns the run id carried by ctx, or 0.
func RunFrom(ctx context.Context) int64 {
	v, _ := ctx.Value(runKey).(int64)
	return v
}

// Redactor is implemented by probers that know secrets a provider may echo
// back (signing tokens, keys): the runner passes every response body
// through Redact before storing it.
type Redactor interface {
	Redact(body []byte) []byte
}
