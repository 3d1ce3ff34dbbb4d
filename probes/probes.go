package probes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
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
	// Pinned names the headers of Header that change what the provider
	// does (an API version sent as a header, e.g. anthropic-version): each
	// one present is part of the fingerprint (see PinnedHeaders). Adapters
	// whose semantics live in the path, query or body pin nothing.
	Pinned []string
}

// PinnedHeaders is the canonical text of the pinned headers present in
// Header: one "name: value\n" line per value, the name lower-cased, lines
// sorted by name (values of one header in their order). It is "" when no
// pinned header is present, so a request pinning nothing (or whose pinned
// headers are absent) has the fingerprint it always had. Storage that
// re-hashes requests keeps this text beside method, path and body and
// passes it to Fingerprint.
func (r *Request) PinnedHeaders() string {
	if len(r.Pinned) == 0 || len(r.Header) == 0 {
		return ""
	}
	names := make([]string, 0, len(r.Pinned))
	for _, n := range r.Pinned {
		names = append(names, strings.ToLower(n))
	}
	sort.Strings(names)
	names = slices.Compact(names)
	var b strings.Builder
	for _, n := range names {
		for _, v := range r.Header.Values(n) {
			b.WriteString(n)
			b.WriteString(": ")
			b.WriteString(v)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// SHA256 returns the request fingerprint: Fingerprint of the method, the
// path (with query), the body bytes and the pinned headers. Hosts and other
// headers are not part of it, so the same request sent to a loopback test
// server and to the real API has the same fingerprint.
func (r *Request) SHA256() string {
	return Fingerprint(r.Method, r.Path, r.Body, r.PinnedHeaders())
}

// Fingerprint is the request fingerprint: the hex SHA-256 of the method,
// the path (with query) and the body bytes, separated by newlines, and,
// only when pinned (Request.PinnedHeaders) is not empty, a NUL byte and
// pinned. A JSON body never holds a raw NUL, so no request without pinned
// headers hashes like one with them, and every request without them keeps
// the fingerprint it had before headers could be pinned.
func Fingerprint(method, path string, body []byte, pinned string) string {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{'\n'})
	h.Write([]byte(path))
	h.Write([]byte{'\n'})
	h.Write(body)
	if pinned != "" {
		h.Write([]byte{0})
		h.Write([]byte(pinned))
	}
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

// Generator is implemented by a prober that can render requests for an
// endpoint where no model generates output: a classification endpoint
// (moderation, a guardrail applied to the input) whose requests carry no
// max_tokens and bill no output tokens. Generates reports whether the
// requests it renders have a model generate output. See Generates.
type Generator interface {
	Generates() bool
}

// Generates reports whether p's requests have a model generate (billed)
// output, capped by the target's max_tokens: what p's Generator says, and
// true for a prober without one (every chat endpoint).
func Generates(p Prober) bool {
	if g, ok := p.(Generator); ok {
		return g.Generates()
	}
	return true
}

// Originer is implemented by a prober whose endpoint is not told by the
// URLs it renders: the in-process simulator listens on a new loopback port
// in every process yet is the same endpoint each time. Origin returns that
// identity, or "" to let the runner take RequestOrigin of the rendered
// request, as it does for every other prober.
type Originer interface {
	Origin() string
}

// AccountScoper is implemented by a prober whose target chooses, in
// headers the request fingerprint leaves out, which account it speaks for
// at its endpoint (OpenAI's OpenAI-Organization and OpenAI-Project):
// account-level policy and enforcement differ per account, so switching a
// target to another one is a reconfiguration of the target, as moving its
// base URL is, never a provider change. AccountScope returns the account's
// identity as space-separated name=value pairs in a fixed order, each
// value query-escaped (so no two accounts read alike), which the runner
// appends to the origin after a space (see ScopedOrigin); "" when the
// target names no account, so its origin is its endpoint's alone, as for
// every other prober. It never holds a credential.
type AccountScoper interface {
	AccountScope() string
}

// ScopedOrigin is origin qualified by an account scope (AccountScoper):
// "https://api.openai.com organization=org-1 project=proj_2". An origin
// has no space of its own (URLOrigin escapes the path), so the scope is
// told apart. It is origin itself when either is "".
func ScopedOrigin(origin, scope string) string {
	if origin == "" || scope == "" {
		return origin
	}
	return origin + " " + scope
}

// UnscopedOrigin is the endpoint part of an origin ScopedOrigin may have
// qualified: origin without its account scope.
func UnscopedOrigin(origin string) string {
	endpoint, _, _ := strings.Cut(origin, " ")
	return endpoint
}

// RequestOrigin is the endpoint identity of r: what its URL holds that its
// fingerprint does not. That is the URL without the fingerprinted path (and
// without the query): scheme, host and the base URL's own path prefix
// ("https://gw.example.com/acct/gw-a/anthropic" for a gateway prefix in
// front of /v1/messages), normalised by URLOrigin. Adapters whose
// fingerprinted path is the whole URL path give scheme and host alone.
func RequestOrigin(r *Request) string {
	raw, _, _ := strings.Cut(r.URL, "?")
	fp, _, _ := strings.Cut(r.Path, "?")
	if fp != "" && strings.HasSuffix(raw, fp) {
		raw = strings.TrimSuffix(raw, fp)
	}
	return URLOrigin(raw)
}

// URLOrigin normalises an API root: its scheme and host lower-cased (host
// names are not resolved: localhost is not 127.0.0.1), the port as a number
// and only when it is not the scheme's default, then its path without a
// trailing slash ("https://myres.openai.azure.com", "http://127.0.0.1:8080/v1").
// User information, query and fragment are left out: they are never an
// endpoint's identity. It is "" for a URL that does not parse or has no
// host.
func URLOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if n, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(n) // ":018101" is ":18101"
	}
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6 literal
	}
	if port != "" {
		host += ":" + port
	}
	// The path as it is sent, not cleaned: a gateway may route "/x/../gw"
	// elsewhere than "/gw".
	return scheme + "://" + host + strings.TrimRight(u.EscapedPath(), "/")
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
