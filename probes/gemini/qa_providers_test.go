package gemini

// QA pass on the provider adapters (branch qa-providers).

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/probestest"
)

// qaEnumSend replays c over loopback HTTP to a Gemini Developer API prober
// the way the runner sends: again while the class is retryable, at most
// three attempts. It returns the last result and how many requests the
// server received.
func qaEnumSend(t *testing.T, c probestest.Case) (probes.Result, int) {
	t.Helper()
	srv := probestest.NewReplay(t, c)
	r := probestest.DoRetrying(t, newTestProber(t, srv.URL, nil, nil), userOnly(), 3)
	return r, srv.Requests()
}

// enumSection returns the enum values (upper-case identifiers) in the part
// of the enum fixture between the lines opening with from and to.
func enumSection(t *testing.T, src, from, to string) []string {
	t.Helper()
	i := strings.Index(src, "\n"+from)
	j := strings.Index(src, "\n"+to)
	if i < 0 || j < i {
		t.Fatalf("fixture: no section %q..%q", from, to)
	}
	var out []string
	for _, v := range regexp.MustCompile(`\b[A-Z][A-Z_]*[A-Z]\b`).FindAllString(src[i+len(from)+1:j], -1) {
		if v != "API" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// TestQAEnumFixture replays an answer for every promptFeedback.blockReason
// and candidates[].finishReason value of the real enum fixture
// (testdata/enums_block_and_finish_reasons.txt, sources in its meta file:
// the Vertex v1 BlockedReason reference, gemini_ex, Firebase's
// vertexai-sdk-test-data) and checks the class the package comment gives
// it. finishReason values are read with answer text and without any. A
// value added to the fixture with no expectation here fails the test.
func TestQAEnumFixture(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "enums_block_and_finish_reasons.txt"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	blocks := enumSection(t, src, "PromptFeedback.BlockedReason", "Candidate.finishReason")
	finishes := enumSection(t, src, "Candidate.finishReason", "SafetyRating fields")
	wantBlocks := []string{"BLOCKED_REASON_UNSPECIFIED", "BLOCKLIST", "FAKE_NEW_BLOCK_REASON", "IMAGE_SAFETY", "OTHER", "PROHIBITED_CONTENT", "SAFETY", "SPII"}
	wantFinishes := []string{"BLOCKLIST", "IMAGE_SAFETY", "LANGUAGE", "MALFORMED_FUNCTION_CALL", "MAX_TOKENS", "OTHER", "PROHIBITED_CONTENT", "RECITATION", "SAFETY", "SPII", "STOP"}
	if !slices.Equal(blocks, wantBlocks) || !slices.Equal(finishes, wantFinishes) {
		t.Fatalf("fixture enums:\nblockReason  %v\nfinishReason %v", blocks, finishes)
	}

	type want struct {
		class  probes.Class
		stage  probes.Stage
		reason string
		cats   []string
	}
	blockedIn := func(reason string, cats ...string) want {
		return want{probes.BlockedInput, probes.StageInput, reason, cats}
	}
	// The ratings are all NEGLIGIBLE: a SAFETY block names no category; any
	// other reason gets its fallback signal (SPII→privacy, else other).
	blockExpect := map[string]want{
		"SAFETY":             blockedIn("SAFETY"),
		"OTHER":              blockedIn("OTHER", probes.CatOther),
		"BLOCKLIST":          blockedIn("BLOCKLIST", probes.CatOther),
		"PROHIBITED_CONTENT": blockedIn("PROHIBITED_CONTENT", probes.CatOther),
		"IMAGE_SAFETY":       blockedIn("IMAGE_SAFETY", probes.CatOther),
		"SPII":               blockedIn("SPII", probes.CatPrivacy),
		// Unknown values are tolerated (Firebase's test data): still a
		// prompt block, recorded in Unknown.
		"FAKE_NEW_BLOCK_REASON": blockedIn("FAKE_NEW_BLOCK_REASON", probes.CatOther),
		// The unused placeholder blocks nothing: with no candidates, no
		// message and no blocked rating nothing was generated.
		"BLOCKED_REASON_UNSPECIFIED": {probes.Transient, probes.StageNone, "no_candidates", nil},
	}
	for _, br := range blocks {
		w, ok := blockExpect[br]
		if !ok {
			t.Errorf("blockReason %q from the fixture has no expectation", br)
			continue
		}
		t.Run("blockReason/"+br, func(t *testing.T) {
			body := `{"promptFeedback":{"blockReason":"` + br + `","safetyRatings":` + negligible + `},"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8},"modelVersion":"gemini-2.0-flash"}`
			r, sent := qaEnumSend(t, probestest.Case{Body: body})
			checkEnum(t, r, sent, w.class, w.stage, w.reason, w.cats)
			if unknown := slices.Contains(r.Unknown, "block_reason:"+br); unknown != (br == "FAKE_NEW_BLOCK_REASON") {
				t.Errorf("block_reason:%s recorded as unknown: %v", br, unknown)
			}
		})
	}

	allowed := func(reason string) want { return want{probes.Allowed, probes.StageNone, reason, nil} }
	blockedOut := func(reason string, cats ...string) want {
		return want{probes.BlockedOutput, probes.StageOutput, reason, cats}
	}
	empty := func(reason string) want {
		return want{probes.Transient, probes.StageNone, "empty_candidate:" + reason, nil}
	}
	finishExpect := map[string]struct{ text, noText want }{
		"STOP":                    {allowed("STOP"), empty("STOP")},
		"MAX_TOKENS":              {allowed("MAX_TOKENS"), allowed("MAX_TOKENS")},
		"RECITATION":              {allowed("RECITATION"), allowed("RECITATION")},
		"OTHER":                   {allowed("OTHER"), empty("OTHER")},
		"LANGUAGE":                {allowed("LANGUAGE"), empty("LANGUAGE")},
		"MALFORMED_FUNCTION_CALL": {allowed("MALFORMED_FUNCTION_CALL"), empty("MALFORMED_FUNCTION_CALL")},
		"SAFETY":                  {blockedOut("SAFETY"), blockedOut("SAFETY")},
		"BLOCKLIST":               {blockedOut("BLOCKLIST", probes.CatOther), blockedOut("BLOCKLIST", probes.CatOther)},
		"PROHIBITED_CONTENT":      {blockedOut("PROHIBITED_CONTENT", probes.CatOther), blockedOut("PROHIBITED_CONTENT", probes.CatOther)},
		"IMAGE_SAFETY":            {blockedOut("IMAGE_SAFETY", probes.CatOther), blockedOut("IMAGE_SAFETY", probes.CatOther)},
		"SPII":                    {blockedOut("SPII", probes.CatPrivacy), blockedOut("SPII", probes.CatPrivacy)},
	}
	for _, fr := range finishes {
		e, ok := finishExpect[fr]
		if !ok {
			t.Errorf("finishReason %q from the fixture has no expectation", fr)
			continue
		}
		for _, v := range []struct {
			name    string
			content string
			w       want
		}{
			{"text", `{"role":"model","parts":[{"text":"Paris is the capital of France."}]}`, e.text},
			{"no_text", `{"role":"model"}`, e.noText},
		} {
			t.Run("finishReason/"+fr+"/"+v.name, func(t *testing.T) {
				body := `{"candidates":[{"content":` + v.content + `,"finishReason":"` + fr + `","safetyRatings":` + negligible + `,"index":0}],` +
					`"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":7,"totalTokenCount":15},"modelVersion":"gemini-2.0-flash"}`
				r, sent := qaEnumSend(t, probestest.Case{Body: body})
				checkEnum(t, r, sent, v.w.class, v.w.stage, v.w.reason, v.w.cats)
				if slices.Contains(r.Unknown, "finish_reason:"+fr) {
					t.Errorf("a documented finish reason is recorded as unknown: %v", r.Unknown)
				}
			})
		}
	}
}

func checkEnum(t *testing.T, r probes.Result, sent int, class probes.Class, stage probes.Stage, reason string, cats []string) {
	t.Helper()
	if r.Class != class || r.Stage != stage || r.Reason != reason {
		t.Errorf("got %s/%q reason %q, want %s/%q reason %q", r.Class, r.Stage, r.Reason, class, stage, reason)
	}
	if !slices.Equal(r.Categories, cats) {
		t.Errorf("categories = %v, want %v", r.Categories, cats)
	}
	wantSent := 1
	if class.Retryable() {
		wantSent = 3
	}
	if sent != wantSent {
		t.Errorf("sent %d times, want %d", sent, wantSent)
	}
}
