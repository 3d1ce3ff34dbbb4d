package wire_test

import (
	"net/http"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	_ "github.com/driftprobe/driftprobe/probes/mistral"
)

// TestWorkspaceSuspensionThroughMistral reads Mistral 403s through the
// adapter: a suspended workspace is account enforcement like a suspended
// account (abuse_block at stage account), while an invalid key stays an
// ordinary client error.
func TestWorkspaceSuspensionThroughMistral(t *testing.T) {
	p, err := probes.New(probes.Target{Name: "m", Provider: "mistral", Model: "mistral-small-latest", APIKey: "test-key-0123", MaxTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		status int
		body   string
		class  probes.Class
	}{
		{403, `{"message":"Your workspace has been suspended. Please contact support."}`, probes.AbuseBlock},
		{403, `{"message":"Your account has been suspended."}`, probes.AbuseBlock},
		{403, `{"object":"error","message":"Your organization has been disabled.","type":"forbidden","code":"3000"}`, probes.AbuseBlock},
		{401, `{"message":"Invalid API key."}`, probes.ClientError},
		{403, `{"message":"invalid api key"}`, probes.ClientError},
	} {
		r := p.Classify(nil, &probes.Response{Status: c.status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(c.body)})
		if r.Class != c.class {
			t.Errorf("%d %s: class %q (reason %q), want %q", c.status, c.body, r.Class, r.Reason, c.class)
		}
		if c.class == probes.AbuseBlock && r.Stage != probes.StageAccount {
			t.Errorf("%d %s: stage %q, want %q", c.status, c.body, r.Stage, probes.StageAccount)
		}
	}
}
