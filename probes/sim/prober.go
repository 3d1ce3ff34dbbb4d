package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/oaiwire"
)

func init() {
	probes.Register(probes.Info{
		Name:      "sim",
		Endpoints: []string{"chat"},
		NeedsKey:  false,
		Signals: []string{
			"400 error.code=content_filter + innererror.content_filter_result{filtered,severity,score} (input)",
			"finish_reason=content_filter + content_filter_results (output)",
			"plain-text refusal (heuristic)", "403 account_suspended (abuse)", "429/5xx with Retry-After",
		},
		Input: true, Output: true, Scores: true,
		RequestID: "x-request-id header", ModelFP: "system_fingerprint",
	}, New)
}

// Prober talks to a sim server: the in-process one it starts when the
// target has no base_url, or a standalone `driftprobe sim` at base_url.
type Prober struct {
	target probes.Target
	base   string
	server *Server
	srv    *http.Server
	now    func() time.Time
}

var _ probes.Prober = (*Prober)(nil)
var _ probes.Authorizer = (*Prober)(nil)
var _ probes.Closer = (*Prober)(nil)
var _ probes.Originer = (*Prober)(nil)

// EmbeddedOrigin is the endpoint identity of the in-process simulator,
// whatever loopback port it listens on.
const EmbeddedOrigin = "sim:embedded"

// New builds a sim prober. Without a base URL it starts an in-process
// server on a loopback port, reached over real HTTP like any provider.
func New(t probes.Target) (probes.Prober, error) {
	p := &Prober{target: t, base: t.BaseURL, now: time.Now}
	if p.base != "" {
		return p, nil
	}
	var cfg Config
	switch c := t.Sim.(type) {
	case *Config:
		if c != nil {
			cfg = *c
		}
	case Config:
		cfg = c
	case nil:
	default:
		return nil, fmt.Errorf("sim: unexpected config type %T", t.Sim)
	}
	p.server = NewServer(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sim: listen: %w", err)
	}
	p.srv = HTTPServer(p.server)
	go func() { _ = p.srv.Serve(ln) }()
	p.base = "http://" + ln.Addr().String()
	return p, nil
}

// Origin is EmbeddedOrigin for the in-process server, and "" for a remote
// sim (its requests' own origin, probes.RequestOrigin, applies).
func (p *Prober) Origin() string {
	if p.server != nil {
		return EmbeddedOrigin
	}
	return ""
}

// Server returns the in-process server, or nil for a remote sim.
func (p *Prober) Server() *Server { return p.server }

// BaseURL returns the URL the prober sends to.
func (p *Prober) BaseURL() string { return p.base }

// Render renders an OpenAI chat-completions request.
func (p *Prober) Render(pr probes.Probe) (*probes.Request, error) {
	return oaiwire.Render(p.base, "/v1/chat/completions", oaiwire.NewChatRequest(p.target, pr, true))
}

// Authorize adds the run id header (and a bearer key when one is set).
func (p *Prober) Authorize(ctx context.Context, r *http.Request) error {
	if run := probes.RunFrom(ctx); run > 0 {
		r.Header.Set(RunHeader, strconv.FormatInt(run, 10))
	}
	if p.target.APIKey != "" {
		r.Header.Set("Authorization", "Bearer "+p.target.APIKey)
	}
	return nil
}

// Classify reads the response with the shared OpenAI/Azure reader, with the
// bearer key (if any) redacted from the result.
func (p *Prober) Classify(_ *probes.Request, resp *probes.Response) probes.Result {
	return oaiwire.Redact(oaiwire.ClassifyChat(resp, p.now()), p.target.APIKey)
}

// Close stops the in-process server.
func (p *Prober) Close() error {
	if p.srv == nil {
		return nil
	}
	// Runs are over when probers close; nothing in flight is worth waiting for.
	if err := p.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
