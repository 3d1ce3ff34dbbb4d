package azure

// Findings of a QA pass on the provider adapters (2026-11-30): each test
// failed before its fix.

import (
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

const qaProvKey = "azkey0123456789abcdefABCDEF0123456789abcdef"

func qaProvDo(t *testing.T, c probestest.Case) probes.Result {
	t.Helper()
	srv := probestest.NewReplay(t, c)
	pr, err := New(probes.Target{Name: "qa-azure", Provider: "azure", Model: "gpt-35-turbo", BaseURL: srv.URL, APIKey: qaProvKey, MaxTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	_, r := probestest.Do(t, pr, probes.Probe{ID: "qa", Messages: []probes.Message{{Role: "user", Content: "hello"}}})
	return r
}

// Verbatim from MicrosoftDocs azure-ai-docs how-to/use-blocklists.md
// ("Analyze text with a blocklist"): a prompt blocked by a custom
// blocklist is a 400 content_filter whose custom_blocklists entry is an
// ARRAY of {filtered, id}.
const qaProvBlocklist400 = `{ 
    "error": { 
        "message": "The response was filtered due to the prompt triggering Azure OpenAI’s content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766", 
        "type": null, 
        "param": "prompt", 
        "code": "content_filter", 
        "status": 400, 
        "innererror": { 
            "code": "ResponsibleAIPolicyViolation", 
            "content_filter_result": { 
                "custom_blocklists": [ 
                    { 
                        "filtered": true, 
                        "id": "raiBlocklistName" 
                    } 
                ], 
                "hate": { "filtered": false, "severity": "safe" }, 
                "self_harm": { "filtered": false, "severity": "safe" }, 
                "sexual": { "filtered": false, "severity": "safe" }, 
                "violence": { "filtered": false, "severity": "safe" } 
            } 
        } 
    } 
}`

// Same page: "If the completion itself is blocked, the response returns
// 200 ... The annotations show that a blocklist was matched."
const qaProvBlocklist200 = `{"id":"chatcmpl-85NkyY0AkeBMunOjyxivQSiTaxGAl","object":"chat.completion","created":1696293652,"model":"gpt-35-turbo",
"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}}],
"choices":[{"index":0,"finish_reason":"content_filter","message":{"role":"assistant"},
"content_filter_results":{"custom_blocklists":[{"filtered":true,"id":"myBlocklistName"}],"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}}],
"usage":{"completion_tokens":75,"prompt_tokens":27,"total_tokens":102}}`

func TestQAProvCustomBlocklistArray(t *testing.T) {
	cases := []struct {
		name  string
		c     probestest.Case
		class probes.Class
		stage probes.Stage
	}{
		{"input_400", probestest.Case{Status: 400, Body: qaProvBlocklist400}, probes.BlockedInput, probes.StageInput},
		{"output_200", probestest.Case{Body: qaProvBlocklist200}, probes.BlockedOutput, probes.StageOutput},
		// The same documented block while another filter reports that it
		// did not run: a filter that ran (the blocklist) fired, so the
		// block stands (package doc: "unless a filter that did run fired:
		// then the block stands"); today it reads as filter_unavailable.
		{"input_400_other_filter_error", probestest.Case{Status: 400, Body: strings.Replace(qaProvBlocklist400,
			`"hate": { "filtered": false, "severity": "safe" }`,
			`"hate": { "error": { "code": "Timeout", "message": "The hate filter timed out" } }`, 1)}, probes.BlockedInput, probes.StageInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := qaProvDo(t, tc.c)
			if r.Class != tc.class || r.Stage != tc.stage {
				t.Fatalf("got %s/%q (reason %q), want %s/%s", r.Class, r.Stage, r.Reason, tc.class, tc.stage)
			}
			// NormalizeAzure maps custom_blocklists to "other": the fired
			// blocklist must name the block's category.
			if !slices.Equal(r.Categories, []string{probes.CatOther}) {
				t.Errorf("categories = %v, want [other] (the custom blocklist that fired); unknown=%v", r.Categories, r.Unknown)
			}
		})
	}
}

// A gateway or the service echoing the api-key in a long error message: the
// key must not survive, not even as a prefix cut by the 1 KiB message bound
// (wire.RedactBytes: "no stored byte may spell a long piece of a key").
func TestQAProvEchoedKeyNotCutBeforeRedaction(t *testing.T) {
	msg := strings.Repeat("a", 1000) + " api-key: " + qaProvKey + " was rejected"
	r := qaProvDo(t, probestest.Case{Status: 401, Body: `{"error":{"code":"401","message":"` + msg + `"}}`})
	for i := 0; i+12 <= len(qaProvKey); i++ {
		if strings.Contains(r.Message, qaProvKey[i:i+12]) {
			t.Fatalf("Result.Message keeps a piece of the key (%q...): tail %q", qaProvKey[i:i+12], r.Message[len(r.Message)-40:])
		}
	}
}
