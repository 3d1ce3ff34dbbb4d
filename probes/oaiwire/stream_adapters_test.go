package oaiwire_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	_ "github.com/driftprobe/driftprobe/probes/all"
	"github.com/driftprobe/driftprobe/probes/oaiwire"
)

// TestStreamThroughAdapters replays QA's mock over HTTP to the three
// adapters built on ClassifyChat: a gateway that answers a request with
// "stream" left out by streaming regardless (200, text/event-stream,
// chunks flushed one by one). The retry rule of the runner (send again
// while the class is retryable, at most three attempts) is applied: a
// streamed content_filter block is sent once (it was sent three times,
// read as transient malformed_response), and a streamed answer is
// allowed with its model.
func TestStreamThroughAdapters(t *testing.T) {
	chunk := func(delta, finish string) string {
		return `data: {"id":"chatcmpl-qa","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	blocked := []string{
		`data: {"id":"","object":"","created":0,"model":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}],"choices":[],"usage":null}` + "\n\n",
		chunk(`{"role":"assistant","content":""}`, "null"),
		chunk(`{"content":"Step one"}`, "null"),
		`data: {"id":"chatcmpl-qa","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"finish_reason":"content_filter","content_filter_results":{"violence":{"filtered":true,"severity":"high"}}}]}` + "\n\n",
		"data: [DONE]\n\n",
	}
	answer := []string{
		chunk(`{"role":"assistant","content":""}`, "null"),
		chunk(`{"content":"Here is a short,"}`, "null"),
		chunk(`{"content":" helpful answer."}`, "null"),
		chunk(`{}`, `"stop"`),
		"data: [DONE]\n\n",
	}
	for _, c := range []struct {
		name     string
		chunks   []string
		class    probes.Class
		cats     []string
		requests int64
	}{
		{"content_filter", blocked, probes.BlockedOutput, []string{"violence"}, 1},
		{"answer", answer, probes.Allowed, nil, 1},
		{"cut before the finish", answer[:3], probes.Transient, nil, 3},
	} {
		var requests atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"stream"`)) {
				t.Errorf("the request asks for a stream: %s", body)
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("X-Request-Id", "req_gw_1")
			for _, ch := range c.chunks {
				_, _ = io.WriteString(w, ch)
				w.(http.Flusher).Flush()
			}
		}))
		for _, tg := range []probes.Target{
			{Name: "openai", Provider: "openai", Model: "gpt-4o", APIKey: "sk-test", BaseURL: srv.URL + "/v1"},
			{Name: "azure", Provider: "azure", Model: "gpt-4o", APIKey: "az-test", BaseURL: srv.URL},
			{Name: "compat", Provider: "openai_compatible", Model: "gpt-4o", APIKey: "gw-test", BaseURL: srv.URL + "/v1"},
		} {
			requests.Store(0)
			p, err := probes.New(tg)
			if err != nil {
				t.Fatal(err)
			}
			req, err := p.Render(probes.Probe{ID: "p1", Messages: []probes.Message{{Role: "user", Content: "hello"}}})
			if err != nil {
				t.Fatal(err)
			}
			var r probes.Result
			for attempt := 1; attempt <= 3; attempt++ {
				hr, err := http.NewRequest(req.Method, req.URL, bytes.NewReader(req.Body))
				if err != nil {
					t.Fatal(err)
				}
				hr.Header = req.Header.Clone()
				if a, ok := p.(probes.Authorizer); ok {
					if err := a.Authorize(hr.Context(), hr); err != nil {
						t.Fatal(err)
					}
				}
				hresp, err := srv.Client().Do(hr)
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(hresp.Body)
				hresp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				r = p.Classify(req, &probes.Response{Status: hresp.StatusCode, Header: hresp.Header, Body: body})
				if !r.Class.Retryable() {
					break
				}
			}
			if r.Class != c.class || !slices.Equal(r.Categories, c.cats) || requests.Load() != c.requests ||
				!slices.Contains(r.Unknown, oaiwire.StreamMarker) || r.RequestID != "req_gw_1" {
				t.Errorf("%s via %s: %s %q %v after %d requests, want %s %v after %d\n%+v", c.name, tg.Provider, r.Class, r.Reason, r.Categories, requests.Load(), c.class, c.cats, c.requests, r)
			}
			if c.class == probes.Allowed && (r.ModelID != "gpt-4o-2024-08-06" || r.Reason != "stop") {
				t.Errorf("%s via %s: %+v", c.name, tg.Provider, r)
			}
			if strings.Contains(r.Message+r.Reason, "test") {
				t.Errorf("%s via %s: the key leaked: %+v", c.name, tg.Provider, r)
			}
		}
		srv.Close()
	}
}
