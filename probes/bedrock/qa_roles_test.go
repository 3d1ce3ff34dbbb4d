package bedrock

import (
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
)

// TestConverseAlternatingRoles: Converse refuses a conversation whose
// roles do not alternate ("A conversation must alternate between user and
// assistant roles") or that opens with an assistant turn ("A conversation
// must start with a user message"): a 400 ValidationException on every
// run, read as client_error, so the probe never measured anything.
// Consecutive turns of one role (also when a system message between them
// moves to the top-level system list) render as one message with a text
// block each, in order; an assistant opening is a render error. A
// conversation that already alternates renders as it always did.
func TestConverseAlternatingRoles(t *testing.T) {
	p := newProber(t, target(EndpointChat, ""))
	render := func(msgs ...probes.Message) (string, error) {
		req, err := p.Render(probes.Probe{ID: "p", Messages: msgs})
		if err != nil {
			return "", err
		}
		return string(req.Body), nil
	}
	m := func(role, content string) probes.Message { return probes.Message{Role: role, Content: content} }
	const tail = `"inferenceConfig":{"maxTokens":256,"temperature":0},"guardrailConfig":{"guardrailIdentifier":"gr1abc2def3g","guardrailVersion":"3","trace":"enabled"}}`

	for _, tc := range []struct {
		name string
		msgs []probes.Message
		want string
	}{
		{"two user turns", []probes.Message{m("user", "a"), m("user", "b")},
			`{"messages":[{"role":"user","content":[{"text":"a"},{"text":"b"}]}],` + tail},
		{"system between user turns", []probes.Message{m("user", "a"), m("system", "s"), m("user", "b")},
			`{"messages":[{"role":"user","content":[{"text":"a"},{"text":"b"}]}],"system":[{"text":"s"}],` + tail},
		{"two assistant turns", []probes.Message{m("user", "a"), m("assistant", "x"), m("assistant", "y"), m("user", "b")},
			`{"messages":[{"role":"user","content":[{"text":"a"}]},{"role":"assistant","content":[{"text":"x"},{"text":"y"}]},{"role":"user","content":[{"text":"b"}]}],` + tail},
		// Unchanged: an alternating conversation (the default corpus's
		// multi-turn probes) keeps its bytes, so its fingerprint.
		{"alternating", []probes.Message{m("system", "s"), m("user", "a"), m("assistant", "x"), m("user", "b")},
			`{"messages":[{"role":"user","content":[{"text":"a"}]},{"role":"assistant","content":[{"text":"x"}]},{"role":"user","content":[{"text":"b"}]}],"system":[{"text":"s"}],` + tail},
	} {
		got, err := render(tc.msgs...)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}

	for _, msgs := range [][]probes.Message{
		{m("assistant", "x"), m("user", "a")},
		{m("system", "s"), m("assistant", "x"), m("user", "a")},
	} {
		_, err := render(msgs...)
		if err == nil || !strings.Contains(err.Error(), "open with a user message") {
			t.Errorf("%v: err %v, want a render error (Converse refuses an assistant opening)", msgs, err)
		}
	}

	// ApplyGuardrail is unaffected: it sends the user texts alone.
	g := newProber(t, target(EndpointGuardrail, ""))
	req, err := g.Render(probes.Probe{ID: "p", Messages: []probes.Message{m("assistant", "x"), m("user", "a"), m("user", "b")}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"source":"INPUT","content":[{"text":{"text":"a"}},{"text":{"text":"b"}}]}`; string(req.Body) != want {
		t.Errorf("guardrail body %s, want %s", req.Body, want)
	}
}
