package bedrock

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
)

// TestBOMBeforeJSONBody: a UTF-8 byte order mark before a JSON answer (RFC
// 8259 §8.1 lets a parser ignore it) is skipped, in Converse, in
// ApplyGuardrail and in an error; the response's body stays as received.
func TestBOMBeforeJSONBody(t *testing.T) {
	setCreds(t)
	const bom = "\xef\xbb\xbf"
	for _, c := range []struct {
		endpoint, fixture string
		status            int
		body              string
		class             probes.Class
	}{
		{EndpointChat, "converse_guardrail_input.json", 200, "", probes.BlockedInput},
		{EndpointChat, "converse_content_filtered.json", 200, "", probes.BlockedOutput},
		{EndpointGuardrail, "apply_guardrail_intervened.json", 200, "", probes.BlockedInput},
		{EndpointChat, "", 403, `{"message":"Access to this API has been disabled: your account has been suspended for repeated violations."}`, probes.AbuseBlock},
	} {
		body := []byte(c.body)
		if c.fixture != "" {
			b, err := os.ReadFile(filepath.Join("testdata", c.fixture))
			if err != nil {
				t.Fatal(err)
			}
			body = b
		}
		p := newProber(t, target(c.endpoint, ""))
		h := http.Header{"X-Amzn-Requestid": {"req-1"}, "X-Amzn-Errortype": {"AccessDeniedException"}}
		if c.status == 200 {
			h.Del("X-Amzn-Errortype")
		}
		plain := p.Classify(nil, &probes.Response{Status: c.status, Header: h, Body: body})
		raw := append([]byte(bom), body...)
		resp := &probes.Response{Status: c.status, Header: h, Body: raw}
		got := p.Classify(nil, resp)
		if got.Class != c.class || !reflect.DeepEqual(got, plain) {
			t.Errorf("%s %s: with a mark %+v, without %+v, want %s", c.endpoint, c.fixture, got, plain, c.class)
		}
		if string(resp.Body) != bom+string(body) {
			t.Errorf("%s %s: the response's body changed", c.endpoint, c.fixture)
		}
	}
}
