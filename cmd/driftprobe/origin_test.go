package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/probes/sim"
	"github.com/driftprobe/driftprobe/storage"
)

// A target moved to another endpoint under the same name (another Azure
// resource, Bedrock region, gateway or server) sends the same request
// bytes, and the request fingerprint leaves hosts out: the answers there
// restart every baseline, as an input change, and never confirm a flip as
// the provider's policy change. Detection goes on at the new endpoint: a
// change there afterwards is an event as usual.
func TestEndpointMoveIsInputChangeNotFlip(t *testing.T) {
	a := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer a.Close()
	// b is stricter than a from its first answer, and from run 7 on loosens
	// back to a's thresholds: a change of b's own.
	b := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{{FromRun: 1, Thresholds: strictThresholds()}, {FromRun: 7, Thresholds: looseThresholds()}}}))
	defer b.Close()
	dir := t.TempDir()
	cfg, db := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "x.db")
	run := func(url string) app.RunJSON {
		t.Helper()
		if err := os.WriteFile(cfg, []byte("targets:\n  - {name: gw, provider: sim, model: m, base_url: \""+url+"\"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runIn(t, "run", "--json", "--no-progress", "--config", cfg, "--db", db)
		var out app.RunJSON
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || len(out.Targets) != 1 {
			t.Fatalf("run at %s: exit %d: %s\n%s", url, code, stderr, stdout)
		}
		return out
	}
	var blockedA int
	for i := 0; i < 3; i++ {
		out := run(a.URL)
		blockedA = out.Targets[0].Verdicts["blocked_input"] + out.Targets[0].Verdicts["blocked_output"]
		if tg := out.Targets[0]; tg.Origin != probes.URLOrigin(a.URL) || tg.OriginChange != nil || tg.InputChanges != 0 {
			t.Fatalf("run %d at a: origin %q (want %q), change %+v, input changes %d", out.RunID, tg.Origin, probes.URLOrigin(a.URL), tg.OriginChange, tg.InputChanges)
		}
	}
	for i := 0; i < 3; i++ {
		out := run(b.URL)
		tg := out.Targets[0]
		if blockedB := tg.Verdicts["blocked_input"] + tg.Verdicts["blocked_output"]; blockedB <= blockedA {
			t.Fatalf("run %d: b blocks %d probes, a %d: the move would show nothing", out.RunID, blockedB, blockedA)
		}
		if tg.Origin != probes.URLOrigin(b.URL) {
			t.Errorf("run %d at b: origin %q", out.RunID, tg.Origin)
		}
		if i == 0 {
			oc := tg.OriginChange
			if oc == nil || oc.From != probes.URLOrigin(a.URL) || oc.To != probes.URLOrigin(b.URL) || oc.FromRun != 3 || tg.InputChanges != 62 {
				t.Errorf("run %d, the first at b: origin change %+v, input changes %d (want a → b after run 3, 62)", out.RunID, oc, tg.InputChanges)
			}
		} else if tg.OriginChange != nil || tg.InputChanges != 0 {
			t.Errorf("run %d, again at b: origin change %+v, input changes %d", out.RunID, tg.OriginChange, tg.InputChanges)
		}
		if len(out.Events) != 0 {
			t.Errorf("run %d at b: the endpoint move made events: %+v", out.RunID, out.Events)
		}
	}
	// A diff across the move says the verdicts moved with the endpoint.
	stdout, stderr, code := runIn(t, "diff", "--json", "--db", db, "--target", "gw", "--from", "3", "--to", "4")
	var d diff.RunDiff
	if code != 0 || json.Unmarshal([]byte(stdout), &d) != nil || !d.OriginMoved || d.FromOrigin != probes.URLOrigin(a.URL) || d.ToOrigin != probes.URLOrigin(b.URL) || len(d.Probes) == 0 {
		t.Errorf("diff across the move: exit %d: %s%s", code, stdout, stderr)
	}
	if stdout, _, _ := runIn(t, "diff", "--db", db, "--target", "gw", "--from", "3", "--to", "4"); !strings.Contains(stdout, "ENDPOINT MOVED: run 3 answered at "+probes.URLOrigin(a.URL)+", run 4 at "+probes.URLOrigin(b.URL)) {
		t.Errorf("diff text across the move does not say so:\n%s", stdout)
	}
	// b loosens from run 7: a change of b's own is an event.
	var evs int
	for i := 0; i < 2; i++ {
		evs += len(run(b.URL).Events)
	}
	stdout, stderr, code = runIn(t, "events", "--json", "--db", db)
	if code != 0 || evs == 0 || !strings.Contains(stdout, `"loosened"`) {
		t.Errorf("b's own loosening after the move: %d events in runs; events: exit %d: %s%s", evs, code, stdout, stderr)
	}
}

// The in-process simulator listens on a new loopback port in every
// process, yet is the same endpoint: its origin is fixed, so consecutive
// runs never see it move.
func TestEmbeddedSimOriginIsStable(t *testing.T) {
	db := filepath.Join(t.TempDir(), "x.db")
	for i := 0; i < 2; i++ {
		stdout, stderr, code := runIn(t, "run", "--json", "--no-progress", "--db", db)
		var out app.RunJSON
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || len(out.Targets) == 0 {
			t.Fatalf("run: exit %d: %s", code, stderr)
		}
		for _, tg := range out.Targets {
			if tg.Origin != sim.EmbeddedOrigin || tg.OriginChange != nil {
				t.Errorf("run %d, %s: origin %q, change %+v", out.RunID, tg.Target, tg.Origin, tg.OriginChange)
			}
		}
	}
}

// originRuns runs the default corpus against one sim target named gw at a
// base URL the caller picks per run, into one database.
type originRuns struct {
	t       *testing.T
	cfg, db string
}

func newOriginRuns(t *testing.T) *originRuns {
	dir := t.TempDir()
	return &originRuns{t: t, cfg: filepath.Join(dir, "c.yaml"), db: filepath.Join(dir, "x.db")}
}

func (o *originRuns) run(url string) app.RunJSON {
	o.t.Helper()
	if err := os.WriteFile(o.cfg, []byte("targets:\n  - {name: gw, provider: sim, model: m, base_url: \""+url+"\"}\n"), 0o644); err != nil {
		o.t.Fatal(err)
	}
	stdout, stderr, code := runIn(o.t, "run", "--json", "--no-progress", "--config", o.cfg, "--db", o.db)
	var out app.RunJSON
	// A dead endpoint's run measures nothing: exit 3, its JSON printed.
	measuredNothing := code == 3 && strings.Contains(stderr, "measured nothing")
	if (code != 0 && !measuredNothing) || json.Unmarshal([]byte(stdout), &out) != nil || len(out.Targets) != 1 {
		o.t.Fatalf("run at %s: exit %d: %s\n%s", url, code, stderr, stdout)
	}
	return out
}

// abortedAt records a run at origin that was aborted before detection saw
// it (a CronJob deadline during the first run after a config change).
func (o *originRuns) abortedAt(origin string) {
	o.t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, o.db)
	if err != nil {
		o.t.Fatal(err)
	}
	defer st.Close()
	tg, err := st.TargetByName(ctx, "gw")
	if err != nil {
		o.t.Fatal(err)
	}
	id, err := st.BeginRun(ctx, storage.Run{CorpusName: "default", CorpusVersion: "x"})
	if err != nil {
		o.t.Fatal(err)
	}
	if err := st.FinishRun(ctx, id, storage.RunAborted, []storage.RunTarget{{TargetID: tg.ID, Status: storage.TargetAborted, Origin: origin}}); err != nil {
		o.t.Fatal(err)
	}
}

func (o *originRuns) events() []*diff.Event {
	o.t.Helper()
	stdout, stderr, code := runIn(o.t, "events", "--json", "--db", o.db)
	var evs []*diff.Event
	if code != 0 || json.Unmarshal([]byte(stdout), &evs) != nil {
		o.t.Fatalf("events: exit %d: %s", code, stderr)
	}
	return evs
}

// movedCategories are the categories the endpoint tests' policies move.
var movedCategories = []string{"violence", "hate", "harassment", "illicit", "weapons", "self_harm", "privacy"}

// thresholds returns movedCategories each at v.
func thresholds(v float64) map[string]float64 {
	th := map[string]float64{}
	for _, c := range movedCategories {
		th[c] = v
	}
	return th
}

// strictThresholds block far more of the default corpus than the sim's
// defaults; looseThresholds are those defaults, written out (a later
// policy keeps a category it does not name at its earlier value).
func strictThresholds() map[string]float64 { return thresholds(0.05) }
func looseThresholds() map[string]float64  { return thresholds(sim.DefaultThreshold) }

func strictSim(from int64) sim.Config {
	return sim.Config{Policies: []sim.Policy{{FromRun: from, Thresholds: strictThresholds()}}}
}

// Two gateways on one host differ only by a path prefix in front of the
// fixed API path, which the fingerprint does not cover: the prefix is part
// of the origin, so a move between them is a move.
func TestGatewayPathMoveIsInputChange(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/gwA/", http.StripPrefix("/gwA", sim.NewServer(sim.Config{})))
	mux.Handle("/gwB/", http.StripPrefix("/gwB", sim.NewServer(strictSim(1))))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	o := newOriginRuns(t)
	for i := 0; i < 3; i++ {
		o.run(srv.URL + "/gwA")
	}
	for i := 0; i < 3; i++ {
		out := o.run(srv.URL + "/gwB")
		if tg := out.Targets[0]; i == 0 && (tg.OriginChange == nil || tg.OriginChange.To != probes.URLOrigin(srv.URL)+"/gwB") {
			t.Errorf("run %d: the move between gateways was not seen: %+v (origin %q)", out.RunID, tg.OriginChange, tg.Origin)
		}
	}
	if evs := o.events(); len(evs) != 0 {
		t.Errorf("a move between gateways made events: %+v", evs)
	}
}

// A run at the new endpoint that never reached detection (aborted) neither
// hides the move from the next run nor, back at the old endpoint, invents
// one: the move is judged against the origin the state was built at.
func TestAbortedRunDoesNotHideOrInventMove(t *testing.T) {
	a := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer a.Close()
	b := httptest.NewServer(sim.NewServer(strictSim(1)))
	defer b.Close()

	hide := newOriginRuns(t)
	for i := 0; i < 3; i++ {
		hide.run(a.URL)
	}
	hide.abortedAt(probes.URLOrigin(b.URL))
	out := hide.run(b.URL)
	if oc := out.Targets[0].OriginChange; oc == nil || oc.From != probes.URLOrigin(a.URL) || oc.FromRun != 3 {
		t.Errorf("run %d after an aborted run at b: origin change %+v", out.RunID, oc)
	}
	hide.run(b.URL)
	hide.run(b.URL)
	if evs := hide.events(); len(evs) != 0 {
		t.Errorf("the move hidden by an aborted run made events: %d, first %+v", len(evs), evs[0])
	}

	invent := newOriginRuns(t)
	for i := 0; i < 3; i++ {
		invent.run(a.URL)
	}
	invent.abortedAt(probes.URLOrigin(b.URL))
	if out := invent.run(a.URL); out.Targets[0].OriginChange != nil || out.Targets[0].InputChanges != 0 {
		t.Errorf("back at a after an aborted run at b: origin change %+v, %d input changes", out.Targets[0].OriginChange, out.Targets[0].InputChanges)
	}
}

// Events belong to the endpoint their flips were seen at: a move leaves an
// open event open and untouched (answers at the new endpoint never revert
// or extend it, and a change there is an event of its own), and back at
// the old endpoint its detection resumes where it was: a flip back there
// reverts the event.
func TestMoveKeepsEventsAtTheirEndpoint(t *testing.T) {
	loose := looseThresholds()
	// a tightens from run 3 and loosens back from run 13.
	a := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{{FromRun: 3, Thresholds: strictThresholds()}, {FromRun: 13, Thresholds: loose}}}))
	defer a.Close()
	// b is strict, and loosens from run 9.
	b := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{strictSim(1).Policies[0], {FromRun: 9, Thresholds: loose}}}))
	defer b.Close()
	o := newOriginRuns(t)
	for i := 0; i < 4; i++ {
		o.run(a.URL)
	}
	evs := o.events()
	if len(evs) != 1 || evs[0].Status != "open" || evs[0].Direction != "tightened" {
		t.Fatalf("a's tightening: %+v", evs)
	}
	updates := len(evs[0].Updates)
	for i := 0; i < 6; i++ { // runs 5–10: the move, b's baselines, b loosens at 9
		o.run(b.URL)
	}
	byID := func() map[int64]*diff.Event {
		m := map[int64]*diff.Event{}
		for _, e := range o.events() {
			m[e.ID] = e
		}
		return m
	}
	evm := byID()
	if len(evm) != 2 || evm[1].Status != "open" || len(evm[1].Updates) != updates || evm[2] == nil || evm[2].Direction != "loosened" {
		t.Fatalf("after b loosened: want event 1 open and untouched, event 2 b's loosening: %+v", evm)
	}
	for _, p := range evm[2].Probes {
		if p.ConfirmedRun < 10 {
			t.Errorf("event 2 probe %s confirmed in run %d", p.ProbeID, p.ConfirmedRun)
		}
	}
	// Back at a (run 11): a's baselines resume, no input change.
	out := o.run(a.URL)
	if oc := out.Targets[0].OriginChange; oc == nil || !oc.Resumed || out.Targets[0].InputChanges != 0 {
		t.Errorf("back at a: origin change %+v, %d input changes (want a resumed, none)", oc, out.Targets[0].InputChanges)
	}
	o.run(a.URL) // run 12: a still strict
	if evm := byID(); evm[1].Status != "open" {
		t.Errorf("event 1 before a loosened: %s", evm[1].Status)
	}
	o.run(a.URL) // run 13: a loosens back
	o.run(a.URL) // run 14: confirmed
	if evm := byID(); evm[1].Status != "reverted" || len(evm) != 2 {
		t.Errorf("a loosened back: event 1 %s, %d events (want event 1 reverted, no new one)", evm[1].Status, len(evm))
	}
}

// A short excursion to another endpoint loses no baseline: a change made at
// the first endpoint meanwhile is an event once the target is back.
func TestExcursionKeepsBaselines(t *testing.T) {
	a := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{{FromRun: 4, Thresholds: strictThresholds()}}})) // tightens from run 4
	defer a.Close()
	b := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer b.Close()
	o := newOriginRuns(t)
	for i := 0; i < 3; i++ {
		o.run(a.URL)
	}
	o.run(b.URL) // run 4, elsewhere
	// Retention keeps the baselines parked at a (they resume on return).
	st, err := storage.Open(context.Background(), o.db)
	if err != nil {
		t.Fatal(err)
	}
	pins, err := diff.LoadPins(context.Background(), st)
	st.Close()
	if err != nil || len(pins.Observations) == 0 || pins.Observations[0] > 3*62 {
		t.Fatalf("pins while parked at a: %v %v", pins.Observations, err)
	}
	if err := os.WriteFile(o.cfg, []byte("targets:\n  - {name: gw, provider: sim, model: m, base_url: \""+a.URL+"\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runIn(t, "run", "--no-progress", "--config", o.cfg, "--db", o.db) // run 5, back at a
	if want := "gw: moved from endpoint " + probes.URLOrigin(b.URL) + " (run 4) back to " + probes.URLOrigin(a.URL) + ": detection there resumes where it was"; code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("the return's summary does not say so (want %q): exit %d\n%s\n%s", want, code, stdout, stderr)
	}
	for i := 0; i < 2; i++ {
		o.run(a.URL) // runs 6–7: a is strict now
	}
	evs := o.events()
	if len(evs) != 1 || evs[0].Direction != "tightened" {
		t.Fatalf("a's tightening during the excursion: %+v", evs)
	}
	for _, p := range evs[0].Probes {
		if p.FirstRun != 5 || p.LastRunBefore != 3 || p.Origin != probes.URLOrigin(a.URL) {
			t.Errorf("probe %s: first run %d, last run before %d at %q (want 5, 3 at a: run 4 was elsewhere)", p.ProbeID, p.FirstRun, p.LastRunBefore, p.Origin)
		}
	}
}

// A run at an endpoint that answers nothing (a mistyped port, a gateway
// path answering 404) is no move: it ends no event and keeps every
// baseline.
func TestDeadEndpointIsNoMove(t *testing.T) {
	a := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{{FromRun: 3, Thresholds: strictThresholds()}}}))
	defer a.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	defer dead.Close()
	o := newOriginRuns(t)
	for i := 0; i < 4; i++ {
		o.run(a.URL)
	}
	out := o.run(dead.URL)
	if out.Targets[0].OriginChange != nil || out.Targets[0].InputChanges != 0 {
		t.Errorf("a dead endpoint moved the target: %+v, %d input changes", out.Targets[0].OriginChange, out.Targets[0].InputChanges)
	}
	out = o.run(a.URL)
	if out.Targets[0].OriginChange != nil || out.Targets[0].InputChanges != 0 {
		t.Errorf("back from a dead endpoint: %+v, %d input changes", out.Targets[0].OriginChange, out.Targets[0].InputChanges)
	}
	if evs := o.events(); len(evs) != 1 || evs[0].Status != "open" || len(evs[0].Updates) != 1 {
		t.Errorf("a's event after a run at a dead endpoint: %+v", evs)
	}
}

// A target alternating between two endpoints run by run (two deployments
// sharing a database and a target name) still confirms a change at either:
// candidates count answers at their own endpoint.
func TestAlternatingEndpointsStillDetect(t *testing.T) {
	a := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{{FromRun: 3, Thresholds: strictThresholds()}}}))
	defer a.Close()
	b := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer b.Close()
	o := newOriginRuns(t)
	o.run(a.URL)
	o.run(a.URL)
	for run := 3; run <= 12; run++ {
		if run%2 == 0 {
			o.run(a.URL)
		} else {
			o.run(b.URL)
		}
	}
	if evs := o.events(); len(evs) != 1 || evs[0].Direction != "tightened" {
		t.Errorf("a's tightening seen every other run: %+v", evs)
	}
}

// Events recorded before origins were kept take the endpoint of the
// target's first run after the upgrade: answers at another endpoint then
// never revert them.
func TestEventsBeforeOriginsTakeTheirEndpoint(t *testing.T) {
	loose := looseThresholds()
	a := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{{FromRun: 3, Thresholds: strictThresholds()}}}))
	defer a.Close()
	b := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{strictSim(1).Policies[0], {FromRun: 8, Thresholds: loose}}}))
	defer b.Close()
	o := newOriginRuns(t)
	for i := 0; i < 4; i++ {
		o.run(a.URL) // event 1 (tightened) at run 4
	}
	// As a database written before origins were kept.
	st, err := storage.Open(context.Background(), o.db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`UPDATE event_probes SET origin = ''`, `UPDATE probe_states SET origin = ''`, `UPDATE run_targets SET origin = ''`} {
		if _, err := st.SQL().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	o.run(a.URL) // run 5: the upgrade's first run, at a
	for i := 0; i < 4; i++ {
		o.run(b.URL) // runs 6–9: b is strict, loosens at 8
	}
	evs := map[int64]*diff.Event{}
	for _, e := range o.events() {
		evs[e.ID] = e
	}
	if evs[1] == nil || evs[1].Status != "open" || evs[2] == nil || evs[2].Direction != "loosened" {
		t.Errorf("want event 1 open at a and b's loosening its own event: %+v", evs)
	}
}

// swapHandler serves with whichever handler was set last.
type swapHandler struct{ h atomic.Pointer[http.Handler] }

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }
func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

// A run at another endpoint that cannot speak for it (degraded) touches
// nothing of the endpoint it left: probes marked nondeterministic there
// are not withdrawn from an event open here.
func TestForeignDegradedRunWithdrawsNothing(t *testing.T) {
	var bh swapHandler
	bh.set(sim.NewServer(strictSim(3))) // b tightens from run 3
	b := httptest.NewServer(&bh)
	defer b.Close()
	a := httptest.NewServer(sim.NewServer(sim.Config{Noise: 0.5, NoiseBand: 1}))
	defer a.Close()
	o := newOriginRuns(t)
	for i := 0; i < 4; i++ {
		o.run(b.URL) // event 1 at b
	}
	for i := 0; i < 8; i++ {
		o.run(a.URL) // runs 5–12: a answers at random, its probes get marked nondeterministic
	}
	bh.set(sim.NewServer(sim.Config{ErrorStatus: 503, ErrorRate: 1}))
	o.run(b.URL) // run 13: b degraded
	evs := o.events()
	var ev1 *diff.Event
	for _, e := range evs {
		if e.ID == 1 {
			ev1 = e
		}
	}
	if ev1 == nil || ev1.Status != "open" || len(ev1.Updates) != 1 {
		t.Errorf("b's event after a degraded run at b: %+v", ev1)
	}
}

// Back at an endpoint, the run screens its answers against that
// endpoint's baselines (resumed), not the ones it leaves: a candidate left
// pending there is screened before it confirms.
func TestReturnIsScreenedAgainstItsOwnBaselines(t *testing.T) {
	a := httptest.NewServer(sim.NewServer(strictSim(3))) // a tightens from run 3
	defer a.Close()
	b := httptest.NewServer(sim.NewServer(strictSim(1)))
	defer b.Close()
	o := newOriginRuns(t)
	o.run(a.URL)
	o.run(a.URL)
	o.run(a.URL) // run 3: candidates at a, screened
	o.run(b.URL)
	o.run(b.URL)
	out := o.run(a.URL) // run 6: back at a, the candidates' second answer
	if tg := out.Targets[0]; tg.OriginChange == nil || !tg.OriginChange.Resumed || tg.Requests <= 62 {
		t.Errorf("run 6 back at a: origin change %+v, %d requests for 62 probes: the candidates were not screened", tg.OriginChange, tg.Requests)
	}
}

// Event rows a schema-16 driftprobe recorded before run origins were kept
// take the endpoint its state was at (migration 17): answers at another
// endpoint never revert them.
func TestSchema16EventRowsTakeTheStateOrigin(t *testing.T) {
	loose := looseThresholds()
	a := httptest.NewServer(sim.NewServer(strictSim(3)))
	defer a.Close()
	b := httptest.NewServer(sim.NewServer(sim.Config{Policies: []sim.Policy{strictSim(1).Policies[0], {FromRun: 8, Thresholds: loose}}}))
	defer b.Close()
	o := newOriginRuns(t)
	for i := 0; i < 4; i++ {
		o.run(a.URL) // event 1 at a
	}
	st, err := storage.Open(context.Background(), o.db)
	if err != nil {
		t.Fatal(err)
	}
	// As schema 16 left it: runs confirmed before run origins were kept,
	// the state's origin known.
	for _, q := range []string{`DROP TABLE parked_states`, `ALTER TABLE event_probes DROP COLUMN origin`, `UPDATE run_targets SET origin = ''`, `ALTER TABLE run_targets DROP COLUMN model`, `DROP TABLE github_holds`, `DROP TABLE origin_scope_unnamed`, `ALTER TABLE run_targets DROP COLUMN detected`, `PRAGMA user_version = 16`} {
		if _, err := st.SQL().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	for i := 0; i < 5; i++ {
		o.run(b.URL) // runs 5–9 (migrates): b strict, loosens at 8
	}
	evs := map[int64]*diff.Event{}
	for _, e := range o.events() {
		evs[e.ID] = e
	}
	if evs[1] == nil || evs[1].Status != "open" || evs[2] == nil || evs[2].Direction != "loosened" {
		t.Errorf("want event 1 open at a and b's loosening its own event: %+v", evs)
	}
}

// db check decodes the detection states, the parked ones included: a
// damaged one would stop the target's detection (or its return) with
// every run.
func TestDBCheckDecodesDetectionStates(t *testing.T) {
	a := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer a.Close()
	b := httptest.NewServer(sim.NewServer(sim.Config{}))
	defer b.Close()
	o := newOriginRuns(t)
	o.run(a.URL)
	o.run(a.URL)
	o.run(b.URL) // a's state parked
	check := func() (storage.CheckReport, int) {
		stdout, stderr, code := runIn(t, "db", "check", "--json", "--db", o.db)
		var rep storage.CheckReport
		if json.Unmarshal([]byte(stdout), &rep) != nil {
			t.Fatalf("db check: exit %d: %s%s", code, stdout, stderr)
		}
		return rep, code
	}
	if rep, code := check(); !rep.OK || code != 0 {
		t.Fatalf("db check of a sound database: exit %d: %+v", code, rep.Structure)
	}
	for _, c := range []struct{ q, want string }{
		{`UPDATE parked_states SET states = x'01020304'`, "parked detection state of target 1 at " + probes.URLOrigin(a.URL) + ": corrupt probe state"},
		{`UPDATE probe_states SET states = x'01020304'`, "detection state of target 1: corrupt probe state"},
	} {
		st, err := storage.Open(context.Background(), o.db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.SQL().Exec(c.q); err != nil {
			t.Fatal(err)
		}
		st.Close()
		rep, code := check()
		if rep.OK || code != 1 || !strings.Contains(strings.Join(rep.Structure, "\n"), c.want) {
			t.Errorf("after %s: exit %d, structure %q (want %q)", c.q, code, rep.Structure, c.want)
		}
	}
}
