package ghissue_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/metrics"
)

// holdSeries scrapes driftprobe_github_hold_until_timestamp_seconds from
// the database collector at c's clock: "api scope until" per series,
// sorted; it fails the test on any label other than api and scope, or a
// label value carrying the credential.
func holdSeries(t *testing.T, s *sys, c *clock) []string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDBCollector(s.st.SQL()).WithClock(c.Now))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != metrics.GitHubHoldUntil {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
				for _, secret := range []string{testToken, tokenEnv, "token $"} {
					if strings.Contains(p.GetValue(), secret) {
						t.Errorf("label %s=%q carries the credential", p.GetName(), p.GetValue())
					}
				}
			}
			if len(l) != 2 || l["api"] == "" || l["scope"] == "" {
				t.Errorf("labels %v: want api and scope only", l)
			}
			until := time.Unix(0, int64(m.GetGauge().GetValue()*1e9)).UTC().Round(time.Millisecond)
			out = append(out, fmt.Sprintf("%s %s %s", l["api"], l["scope"], until.Format(time.RFC3339Nano)))
		}
	}
	slices.Sort(out)
	return out
}

// heldNow is what `driftprobe outbox` lists as the waits in force at c's
// clock, as holdSeries prints series.
func heldNow(t *testing.T, s *sys, c *clock) []string {
	t.Helper()
	hs, err := ghissue.Holds(context.Background(), s.st)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hs {
		if h.Active(c.Now()) {
			out = append(out, fmt.Sprintf("%s %s %s", h.API, h.Scope, h.Until.UTC().Round(time.Millisecond).Format(time.RFC3339Nano)))
		}
	}
	slices.Sort(out)
	return out
}

// TestHoldMetricFollowsRecordedWaits: the waits real deliveries record
// against the fake GitHub (a secondary rate limit of the token, then an
// outage of the host) are exported by the database collector exactly as
// `driftprobe outbox` lists the waits in force: the API origin, the scope
// (credential, host) and the end, never the credential. A wait that has
// ended is absent although its row is still recorded, and so is one
// outbox --clear-holds deleted.
func TestHoldMetricFollowsRecordedWaits(t *testing.T) {
	ctx := context.Background()
	f := newFakeGitHub(t, "acme", "llm-drift", testToken)
	s := fixture(t, f.BaseURL())
	c := newClock()
	if got := holdSeries(t, s, c); len(got) != 0 {
		t.Fatalf("no wait recorded: %v", got)
	}

	f.addFault(secondaryRateLimit(429, 600))
	if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 1 || res.Sent != 0 {
		t.Fatalf("rate limited pass: %+v", res)
	}
	limited := heldNow(t, s, c)
	if len(limited) != 1 || !strings.Contains(limited[0], " credential ") {
		t.Fatalf("waits in force after the rate limit: %v", limited)
	}
	if want := c.Now().Add(600 * time.Second).UTC().Format(time.RFC3339Nano); !strings.HasSuffix(limited[0], " "+want) {
		t.Errorf("wait %q: want it to end at GitHub's Retry-After, %s", limited[0], want)
	}
	if got := holdSeries(t, s, c); !slices.Equal(got, limited) {
		t.Errorf("rate limit: series %v, want the wait in force %v", got, limited)
	}

	c.Advance(601 * time.Second) // the limit is over; its row stays until GitHub answers
	if hs, err := ghissue.Holds(ctx, s.st); err != nil || len(hs) != 1 {
		t.Fatalf("recorded waits: %+v %v, want the ended one still there", hs, err)
	}
	if got := holdSeries(t, s, c); len(got) != 0 {
		t.Errorf("the wait has ended: series %v, want none", got)
	}

	f.addFault(outage(503))
	if res := deliver(t, s, c, ghissue.Options{}); res.Failed != 1 || res.Sent != 0 {
		t.Fatalf("outage pass: %+v", res)
	}
	down := heldNow(t, s, c)
	if len(down) != 1 || !strings.Contains(down[0], " host ") || !strings.HasPrefix(down[0], "http://127.0.0.1:") {
		t.Fatalf("waits in force after the outage: %v", down)
	}
	if got := holdSeries(t, s, c); !slices.Equal(got, down) {
		t.Errorf("outage: series %v, want the wait in force %v", got, down)
	}

	if cleared, err := ghissue.ClearHolds(ctx, s.st); err != nil || len(cleared) != 2 {
		t.Fatalf("clear holds: %+v %v", cleared, err)
	}
	if got := holdSeries(t, s, c); len(got) != 0 {
		t.Errorf("waits cleared: series %v, want none", got)
	}
}
