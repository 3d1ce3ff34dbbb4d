package wire

import (
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/probes"
)

// Review 34284a8 (RedactBytes doc: "no stored byte may spell a long piece
// of a key"): cutSecret only redacts a prefix that ENDS the text. A key
// cut by anyone else (a gateway that bounds its own message and appends
// "…" or "(truncated)"), or a cut message inside a body (the JSON string
// is followed by `"}}`), keeps its prefix: keyFragments matches only a
// key's whole maximal alphanumeric run, never a 12+ piece of it. The
// runner stores resp.Body after RedactBytes, so the stored body (and
// evidence, issues) keeps 32 letters and digits of the key here.
func TestReviewCutKeyFollowedByTextLeaks(t *testing.T) {
	const key = "sk-proj-QAprov0123456789abcdefghijABCDEFGHIJ0123456789klmnop"
	for _, in := range []string{
		`{"error":{"message":"upstream rejected Authorization: Bearer ` + key[:40] + `…","type":"invalid_request_error"}}`,
		"upstream rejected Authorization: Bearer " + key[:40] + "... (truncated)",
	} {
		out := string(RedactBytes([]byte(in), key))
		for i := 8; i+minFragment <= len(key); i++ {
			if strings.Contains(out, key[i:i+minFragment]) {
				t.Errorf("RedactBytes keeps %q of the key in %q", key[i:i+minFragment], out)
				break
			}
		}
	}
}

// Review 34284a8: cutSecret redacts any text ENDING in the first 4+ bytes
// of the key. Azure keys are 32 lowercase hex digits; OpenAI/Azure
// system_fingerprint values ("fp_" + hex), Azure model ids
// ("gpt-4-0613", "gpt-35-turbo-0125") and UUID request ids end in hex
// too. With a key beginning "6fcb" (1 key in 65,536) ModelFP
// "fp_44709d6fcb" is stored as "fp_44709d[REDACTED]"; model_fp feeds
// diff's model comparison (JoinModel), so rotating the key changes the
// stored model of an unchanged model (trackModel records a change,
// modelChanged is true, a flip confirmed across the rotation is labelled
// model_change), and the fingerprint is lost from evidence. Nothing of
// the key was there: the value merely ends with 16 bits that match it.
func TestReviewCutSecretOverRedactsHexFields(t *testing.T) {
	const key = "6fcb0613c0ffee0123456789abcdef01" // an Azure-style key
	in := probes.Result{Class: probes.Allowed, ModelID: "gpt-4-0613", ModelFP: "fp_44709d6fcb", RequestID: "0d7c6a1e-5b3f-4c2a-9e8d-1f2a3b4c6fcb"}
	r := Redact(in, key)
	if r.ModelFP != in.ModelFP || r.ModelID != in.ModelID || r.RequestID != in.RequestID {
		t.Errorf("Redact changed fields that hold no part of the key: model %q→%q, fp %q→%q, request id %q→%q",
			in.ModelID, r.ModelID, in.ModelFP, r.ModelFP, in.RequestID, r.RequestID)
	}
	r = Redact(probes.Result{ModelID: "gpt-4-0613"}, "0613"+key[4:])
	if r.ModelID != "gpt-4-0613" {
		t.Errorf("model id gpt-4-0613 stored as %q under a key starting 0613", r.ModelID)
	}
}
