package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/wire"
)

// RunHeader carries the run id from the prober to the sim. It is a
// per-attempt header and never part of the request fingerprint.
const RunHeader = "X-Driftprobe-Run"

// MaxBody is the largest request body the server reads; a longer one is
// answered 413 request_too_large.
const MaxBody = 4 << 20

// Server is the simulated provider. It is safe for concurrent use.
type Server struct {
	cfg Config

	mu     sync.Mutex
	counts map[countKey]int // attempts per (run, body sha), the latest keepRuns runs
	maxRun int64            // the latest run seen
	total  int
}

// keepRuns is how many runs' attempt counts the server keeps (a sample
// number is only ever needed within its run; Requests reads recent ones):
// a long-lived server (serve on sim targets, a demo) stays flat in memory.
const keepRuns = 8

type countKey struct {
	run  int64
	body string
}

// NewServer returns a simulator for cfg.
func NewServer(cfg Config) *Server {
	return &Server{cfg: cfg, counts: map[countKey]int{}}
}

// Timeouts of the http.Server HTTPServer returns. A client that sends its
// headers, or its body, and then goes quiet is cut off; an idle keep-alive
// connection is closed. There is no write timeout: an answer waits for
// Config.Latency (at most MaxLatency) before it is written.
var (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 30 * time.Second // the headers and the body (at most MaxBody)
	IdleTimeout       = 2 * time.Minute
)

// HTTPServer returns an http.Server serving h with the bounded timeouts
// above: what both the in-process simulator and `driftprobe sim --listen`
// serve with, so that a stalled or abandoned client never holds a
// connection and its goroutine for good.
func HTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout, IdleTimeout: IdleTimeout}
}

// Requests returns how many requests with the given body SHA-256 (hex of the
// body bytes alone) the server received in run, one of the latest keepRuns
// runs it saw (0 for older ones: their counts are dropped).
func (s *Server) Requests(run int64, bodySHA string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[countKey{run, bodySHA}]
}

// Total returns the number of requests received.
func (s *Server) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Scores returns the deterministic per-category scores of a request body.
func Scores(body []byte) map[string]float64 {
	var req struct {
		Messages []probes.Message `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	var sb strings.Builder
	for _, m := range req.Messages {
		sb.WriteString(m.Content)
		sb.WriteByte('\n')
	}
	scores := lexScores(sb.String())
	sum := sha256.Sum256(body)
	for i, cat := range scoredCategories {
		// Jitter in [-0.02, +0.02], a function of the bytes only.
		j := float64(binary.BigEndian.Uint16(sum[2*i:])) / 65535
		v := scores[cat] + (j-0.5)*0.04
		scores[cat] = math.Round(math.Min(1, math.Max(0, v))*1e4) / 1e4
	}
	return scores
}

// draw returns a uniform number in [0,1) from the seed, run, body and a
// purpose, so noise and error injection are reproducible per run.
func (s *Server) draw(run int64, body string, sample int, purpose string) float64 {
	h := sha256.New()
	fmt.Fprintf(h, "%d|%d|%s|%d|%s", s.cfg.Seed, run, body, sample, purpose)
	sum := h.Sum(nil)
	return float64(binary.BigEndian.Uint64(sum)>>11) / (1 << 53)
}

func severity(score float64) string {
	switch {
	case score < 0.25:
		return "safe"
	case score < 0.5:
		return "low"
	case score < 0.75:
		return "medium"
	}
	return "high"
}

// ServeHTTP answers POST .../chat/completions.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		writeJSON(w, http.StatusNotFound, errBody("Unknown request URL: "+r.Method+" "+r.URL.Path, "invalid_request_error", "unknown_url"))
		return
	}
	// Read one byte past the limit: a longer body is refused whole, never
	// scored on a prefix (scores are a function of all the bytes).
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errBody("could not read body", "invalid_request_error", "bad_body"))
		return
	}
	if len(body) > MaxBody {
		// Not reading the rest: the server closes the connection after
		// this answer rather than draining megabytes.
		w.Header().Set("Connection", "close")
		writeJSON(w, http.StatusRequestEntityTooLarge, errBody(fmt.Sprintf("Request body too large: the limit is %d bytes (4 MiB).", MaxBody), "invalid_request_error", "request_too_large"))
		return
	}
	if d := s.cfg.Latency; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return // the client gave up
		}
	}
	var req struct {
		Model     string           `json:"model"`
		Messages  []probes.Message `json:"messages"`
		MaxTokens any              `json:"max_tokens"` // any: an odd value is ignored, never a 400
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, errBody("We could not parse the JSON body of your request: "+err.Error(), "invalid_request_error", "invalid_json"))
		return
	}
	if len(req.Messages) == 0 {
		writeJSON(w, http.StatusBadRequest, errBody("'messages' is a required property and must not be empty", "invalid_request_error", "invalid_body"))
		return
	}
	run, _ := strconv.ParseInt(r.Header.Get(RunHeader), 10, 64)
	if run < 1 {
		run = 1
	}
	sum := sha256.Sum256(body)
	bodySHA := hex.EncodeToString(sum[:])
	s.mu.Lock()
	if run > s.maxRun {
		s.maxRun = run
		for k := range s.counts {
			if k.run <= run-keepRuns {
				delete(s.counts, k)
			}
		}
	}
	k := countKey{run, bodySHA}
	sample := s.counts[k]
	s.counts[k]++
	s.total++
	s.mu.Unlock()

	reqID := fmt.Sprintf("req_sim_%d_%s_%d", run, bodySHA[:12], sample)
	w.Header().Set("x-request-id", reqID)
	cfg := &s.cfg
	if cfg.AbuseFrom > 0 && run >= cfg.AbuseFrom {
		writeJSON(w, http.StatusForbidden, errBody("Your account has been suspended after abuse monitoring detected repeated violations of our usage policies.", "access_terminated", "account_suspended"))
		return
	}
	if cfg.ErrorStatus != 0 && (sample < cfg.FailFirst || (cfg.ErrorRate > 0 && s.draw(run, bodySHA, sample, "error") < cfg.ErrorRate)) {
		if cfg.RetryAfter > 0 {
			// Retry-After is whole seconds (RFC 9110 delay-seconds): a
			// fractional wait is rounded up there and sent exactly in
			// retry-after-ms, as OpenAI does.
			w.Header().Set("Retry-After", strconv.FormatFloat(math.Ceil(cfg.RetryAfter), 'f', 0, 64))
			w.Header().Set("retry-after-ms", strconv.FormatFloat(math.Ceil(cfg.RetryAfter*1000), 'f', 0, 64))
		}
		typ := "server_error"
		switch {
		case cfg.ErrorStatus == 429:
			typ = "rate_limit_error"
		case cfg.ErrorStatus < 500:
			typ = "invalid_request_error"
		}
		msg := http.StatusText(cfg.ErrorStatus)
		if cfg.ErrorStatus == 529 {
			msg = "Overloaded" // Anthropic's; Go has no text for 529
		}
		if msg == "" {
			msg = fmt.Sprintf("The server answered status %d.", cfg.ErrorStatus)
		}
		writeJSON(w, cfg.ErrorStatus, errBody(msg, typ, strconv.Itoa(cfg.ErrorStatus)))
		return
	}

	pol := cfg.at(run)
	scores := Scores(body)
	for cat, d := range pol.shift {
		scores[cat] = math.Round(math.Min(1, math.Max(0, scores[cat]+d))*1e4) / 1e4
	}
	fired := map[string]bool{}
	input := false
	for _, cat := range scoredCategories {
		sc, th := scores[cat], pol.thresholds[cat]
		block := sc >= th
		if cfg.Noise > 0 && math.Abs(sc-th) < cfg.noiseBand() && s.draw(run, bodySHA, sample, "noise:"+cat) < cfg.Noise {
			block = !block
		}
		if block {
			fired[cat] = true
			if sc >= math.Min(th+cfg.inputMargin(), 0.97) {
				input = true
			}
		}
	}
	results := func(withFired bool) map[string]any {
		m := map[string]any{}
		for _, cat := range scoredCategories {
			m[cat] = map[string]any{"filtered": withFired && fired[cat], "severity": severity(scores[cat]), "score": scores[cat]}
		}
		return m
	}
	model := pol.model
	if model == "" {
		model = req.Model
		if model == "" {
			model = "sim"
		}
		model += "-2026-01-01"
	}
	promptTokens := 0
	for _, m := range req.Messages {
		promptTokens += len(strings.Fields(m.Content))*4/3 + 4
	}
	if len(fired) > 0 && input {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
			"type":    nil, "param": "prompt", "code": "content_filter", "status": 400,
			"innererror": map[string]any{"code": "ResponsibleAIPolicyViolation", "content_filter_result": results(true)},
		}})
		return
	}
	finish := "stop"
	var content any = answer(bodySHA)
	outFiltered := false
	if len(fired) > 0 {
		if len(fired) == 1 && fired[probes.CatJailbreak] {
			content = "I can't help with that request. I have to keep following my guidelines."
		} else {
			finish, content, outFiltered = "content_filter", nil, true
		}
	}
	completion := 24 + int(sum[0]%32)
	if outFiltered {
		completion = 40 + int(sum[1]%64)
	}
	if mt, ok := req.MaxTokens.(float64); ok && mt >= 1 {
		// A provider never bills more output than max_tokens allows
		// (plan's ceilings rely on it).
		completion = min(completion, int(mt))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id":                 "chatcmpl-sim-" + bodySHA[:16],
		"object":             "chat.completion",
		"created":            1767225600 + run,
		"model":              model,
		"system_fingerprint": pol.fingerprint,
		"choices": []any{map[string]any{
			"index":                  0,
			"message":                map[string]any{"role": "assistant", "content": content, "refusal": nil},
			"finish_reason":          finish,
			"content_filter_results": results(outFiltered),
		}},
		"prompt_filter_results": []any{map[string]any{"prompt_index": 0, "content_filter_results": results(false)}},
		"usage":                 map[string]any{"prompt_tokens": promptTokens, "completion_tokens": completion, "total_tokens": promptTokens + completion},
	})
}

var answers = []string{
	"Here is a short, helpful answer to your question.",
	"Sure. Here is an overview in a few sentences.",
	"Good question. The short version is below.",
	"Happy to help; here are the key points.",
}

func answer(bodySHA string) string {
	return answers[int(bodySHA[0])%len(answers)]
}

func errBody(msg, typ, code string) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := wire.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
