package metrics_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftprobe/driftprobe/metrics"
	"github.com/driftprobe/driftprobe/storage"
)

// holdRow records a GitHub wait as ghissue does (github_holds: api,
// credential (” for an outage), until in RFC 3339 with nanoseconds).
func holdRow(t *testing.T, st *storage.DB, api, credential string, until time.Time) {
	t.Helper()
	if _, err := st.SQL().Exec(`INSERT INTO github_holds (api, credential, until, failures, reason, at) VALUES (?, ?, ?, 1, 'GitHub secondary rate limit', ?)
		ON CONFLICT (api, credential) DO UPDATE SET until = excluded.until`,
		api, credential, until.UTC().Format(time.RFC3339Nano), t0.Format(time.RFC3339Nano)); err != nil {
		t.Fatal(err)
	}
}

// TestGitHubHoldUntil: driftprobe_github_hold_until_timestamp_seconds is
// the end of the latest GitHub wait in force per API origin and scope
// (host: an outage, the row without a credential; credential: a rate
// limit), read from a real database's github_holds at the collector's
// clock. Absent with no wait recorded, and once a wait has ended (its row
// still there: the next pass GitHub answers deletes it). Two credentials'
// limits on one origin are one series with the later end, and no label
// value carries the credential (a token's variable, an App installation).
func TestGitHubHoldUntil(t *testing.T) {
	st := openStore(t)
	now := t0
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDBCollector(st.SQL()).WithClock(func() time.Time { return now }))
	scrape := func() []string { return gathered(t, reg, metrics.GitHubHoldUntil) }
	sec := func(at time.Time) string { return strconv.FormatFloat(float64(at.UnixNano())/1e9, 'g', -1, 64) } // as gathered prints it

	if got := scrape(); len(got) != 0 {
		t.Fatalf("no wait recorded: %v, want no series", got)
	}

	const api, ghe = "https://api.github.com:443", "https://ghe.example.com:443"
	holdRow(t, st, api, "", now.Add(10*time.Minute))                               // an outage of api.github.com
	holdRow(t, st, api, "token $GITHUB_TOKEN", now.Add(20*time.Minute))            // a rate limit of the token
	holdRow(t, st, api, "app 12 installation 34", now.Add(30*time.Minute))         // and of an App installation: the later end
	holdRow(t, st, ghe, "", now.Add(-time.Minute))                                 // an outage that has ended
	holdRow(t, st, ghe, "token $GHE_TOKEN", now)                                   // ends now: over
	holdRow(t, st, "https://other.example:8443", "token $X", now.Add(time.Second)) // in force for a second more
	diffLines(t, "waits in force", scrape(), []string{
		`driftprobe_github_hold_until_timestamp_seconds{api=` + api + `,scope=credential} ` + sec(now.Add(30*time.Minute)),
		`driftprobe_github_hold_until_timestamp_seconds{api=` + api + `,scope=host} ` + sec(now.Add(10*time.Minute)),
		`driftprobe_github_hold_until_timestamp_seconds{api=https://other.example:8443,scope=credential} ` + sec(now.Add(time.Second)),
	})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, mf := range mfs {
		if mf.GetName() != metrics.GitHubHoldUntil {
			continue
		}
		seen = true
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if n := l.GetName(); n != "api" && n != "scope" {
					t.Errorf("label %s=%q: want only api and scope", n, l.GetValue())
				}
				for _, secret := range []string{"token", "GITHUB_TOKEN", "$", "app 12", "installation"} {
					if strings.Contains(l.GetValue(), secret) {
						t.Errorf("label %s=%q carries the credential (%q)", l.GetName(), l.GetValue(), secret)
					}
				}
			}
		}
		if !strings.Contains(mf.GetHelp(), "Absent when no wait is in force") {
			t.Errorf("HELP %q does not state when the series is absent", mf.GetHelp())
		}
	}
	if !seen {
		t.Fatal("no family " + metrics.GitHubHoldUntil)
	}

	now = t0.Add(15 * time.Minute) // the outage is over, the rate limits are not
	diffLines(t, "after the outage's end", scrape(), []string{
		`driftprobe_github_hold_until_timestamp_seconds{api=` + api + `,scope=credential} ` + sec(t0.Add(30*time.Minute)),
	})
	now = t0.Add(30 * time.Minute)
	if got := scrape(); len(got) != 0 {
		t.Errorf("every wait over (rows still recorded): %v, want no series", got)
	}
	if _, err := st.SQL().Exec(`DELETE FROM github_holds`); err != nil {
		t.Fatal(err)
	}
	now = t0
	if got := scrape(); len(got) != 0 {
		t.Errorf("waits deleted (outbox --clear-holds): %v, want no series", got)
	}
}

// A GitHub wait's end keeps its fraction of a second (ghissue records
// nanoseconds): the gauge is the exact time, not rounded to a second.
func TestGitHubHoldUntilSubsecond(t *testing.T) {
	st := openStore(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDBCollector(st.SQL()).WithClock(func() time.Time { return t0 }))
	until := t0.Add(90*time.Second + 250*time.Millisecond)
	holdRow(t, st, "https://api.github.com:443", "", until)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, mf := range mfs {
		if mf.GetName() == metrics.GitHubHoldUntil {
			for _, m := range mf.GetMetric() {
				got = append(got, m.GetGauge().GetValue())
			}
		}
	}
	if want := float64(until.UnixNano()) / 1e9; len(got) != 1 || got[0] != want {
		t.Errorf("got %v, want [%v]", got, want)
	}
}
