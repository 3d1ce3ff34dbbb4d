package wire

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
)

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want time.Duration
	}{
		{7, 7 * time.Second}, {0.25, 250 * time.Millisecond}, {0, 0}, {-5, 0}, {math.NaN(), 0},
		{1e10, math.MaxInt64}, {1e300, math.MaxInt64}, {math.Inf(1), math.MaxInt64}, {math.Inf(-1), 0},
	} {
		if got := Duration(c.v, time.Second); got != c.want {
			t.Errorf("Duration(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

// TestRetryAfterOutOfRange: found by FuzzClassify. A float conversion out of
// range used to yield a huge negative wait.
func TestRetryAfterOutOfRange(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, v := range [][2]string{{"Retry-After", "1e300"}, {"Retry-After", "NaN"}, {"Retry-After", "Inf"}, {"retry-after-ms", "+Inf"}, {"retry-after-ms", "NaN"}} {
		h := http.Header{}
		h.Set(v[0], v[1])
		if d := RetryAfter(h, now); d < 0 {
			t.Errorf("%s: %s = %v", v[0], v[1], d)
		}
	}
	h := http.Header{}
	h.Set("retry-after-ms", "1500")
	if d := RetryAfter(h, now); d != 1500*time.Millisecond {
		t.Errorf("retry-after-ms 1500 = %v", d)
	}
}

func TestRedact(t *testing.T) {
	const key = "sk-redact-0123456789"
	r := Redact(probes.Result{
		Reason: "x " + key, Message: strings.Repeat("m", MaxMessage-5) + key, RequestID: key, ModelID: key, ModelFP: key,
		Unknown: []string{"category:" + key}, Signals: []probes.Signal{{Category: probes.CatOther, Raw: key, Severity: key}},
	}, key, "", "abc")
	for _, s := range []string{r.Reason, r.Message, r.RequestID, r.ModelID, r.ModelFP, r.Unknown[0], r.Signals[0].Raw, r.Signals[0].Severity} {
		if strings.Contains(s, key) {
			t.Errorf("key left in %q", s)
		}
	}
	if len(r.Message) > MaxMessage {
		t.Errorf("message %d bytes", len(r.Message))
	}
	// A short key replaced by the longer marker must not push Message over
	// its bound.
	r = Redact(probes.Result{Message: strings.Repeat("k3y!", MaxMessage/4)}, "k3y!")
	if len(r.Message) > MaxMessage {
		t.Errorf("message %d bytes after redacting a short key", len(r.Message))
	}
}
