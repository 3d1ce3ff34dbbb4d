package storage

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
)

// testObservations returns n observations shaped like a real run's: JSON
// response bodies a little over the compression threshold, some under it,
// some missing, a dozen signals, categories and unknown values.
func testObservations(runID, targetID int64, n int) []*Observation {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cats := []string{"hate", "harassment", "self-harm", "sexual", "violence", "illicit", "privacy", "jailbreak", "weapons", "other", "minors", "extremism"}
	out := make([]*Observation, n)
	for i := range out {
		var sigs []probes.Signal
		for k, c := range cats {
			sigs = append(sigs, probes.Signal{Category: c, Raw: strings.ToUpper(c) + "_RAW", Score: float64((i*7+k*13)%1000) / 1000, HasScore: true, Fired: (i+k)%5 == 0})
		}
		var fired []string
		if i%3 == 0 {
			fired = []string{cats[i%len(cats)]}
		}
		if i%7 == 0 {
			fired = append(fired, "zz-"+cats[(i+1)%len(cats)])
		}
		var unknown []string
		if i%11 == 0 {
			unknown = []string{"new_key", "odd_reason"}
		}
		req := []byte(fmt.Sprintf(`{"model":"sim-1","messages":[{"role":"user","content":"probe %d: tell me something borderline"}],"max_tokens":64}`, i))
		var body []byte
		switch i % 10 {
		case 0: // no body (transport error)
		case 1, 2: // small body stored raw
			body = []byte(fmt.Sprintf(`{"error":{"type":"invalid_request_error","message":"blocked %d"}}`, i))
		default:
			// Shaped like an Azure-style chat answer: per-category filter
			// results for the prompt and the completion (~1.5 KB).
			var b bytes.Buffer
			filters := func() {
				b.WriteString(`{"content_filter_results":{`)
				for k, c := range cats {
					if k > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `"%s":{"filtered":%t,"score":%.4f,"severity":"safe"}`, c, sigs[k].Fired, sigs[k].Score)
				}
				b.WriteString(`}`)
			}
			b.WriteString(`{"choices":[`)
			filters()
			fmt.Fprintf(&b, `,"finish_reason":"stop","index":0,"message":{"content":"Here is a short answer to question %d.","role":"assistant"}}],`, i)
			fmt.Fprintf(&b, `"created":%d,"id":"chatcmpl-sim-%016x","model":"sim-large-2026-01-01","object":"chat.completion","prompt_filter_results":[`, 1767225601+i, uint64(i)*0x9e3779b97f4a7c15)
			filters()
			fmt.Fprintf(&b, `,"prompt_index":0}],"system_fingerprint":"fp_%08x","usage":{"completion_tokens":%d,"prompt_tokens":31,"total_tokens":%d}}`, i*2654435761%(1<<32), 64+i%9, 95+i%9)
			body = b.Bytes()
		}
		if i%13 == 0 {
			req = bytes.Repeat(req, 12) // a large request body, compressed
		}
		var pinned string
		if i%4 == 1 { // a pinned header (an API version), as Anthropic's requests carry
			pinned = fmt.Sprintf("anthropic-version: 2023-06-%02d\n", 1+i%28)
		}
		out[i] = &Observation{
			RunID: runID, TargetID: targetID, ProbeID: fmt.Sprintf("p%05d", i/2), ProbeSHA256: fmt.Sprintf("%064x", i/2), Sample: i % 2,
			RequestSHA256: fmt.Sprintf("%064x", i*3), RequestMethod: "POST", RequestPath: "/v1/chat/completions", RequestBody: req, RequestPinned: pinned,
			Result: probes.Result{Class: probes.Allowed, Stage: "output", Categories: fired, Signals: sigs, Reason: "stop", Message: fmt.Sprintf("msg %d \"quoted\" <b>", i),
				Heuristic: i%17 == 0, RequestID: fmt.Sprintf("req-%d", i), ModelID: "sim-1-2026", ModelFP: "fp_abc", TokensIn: 31, TokensOut: 64 + i%9, Unknown: unknown},
			HTTPStatus: 200, Latency: time.Duration(i)*time.Millisecond + time.Duration(i%4)*250*time.Microsecond, CostUSD: float64(i) / 1e5, Attempts: 1 + i%3,
			BodySHA256: fmt.Sprintf("%064x", i*5), Body: body, BodyTruncated: i%19 == 0, ObservedAt: at.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return out
}

// insertObservationsReference is the original row-at-a-time insert: the
// batched insert must store exactly what it stored.
func insertObservationsReference(ctx context.Context, d *DB, obs []*Observation) error {
	return d.Tx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO observations (run_id, target_id, probe_id, probe_sha256, sample, request_sha256, request_method, request_path, request_body, request_pinned,
			class, stage, categories, signals, reason, message, heuristic, unknown, http_status, request_id, model_id, model_fp,
			latency_ms, tokens_in, tokens_out, cost_usd, attempts, body_sha256, body, body_truncated, observed_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, o := range obs {
			r := o.Result
			var sig any = ""
			if len(r.Signals) > 0 {
				sig = appendSignals(nil, r.Signals)
			}
			res, err := st.ExecContext(ctx, o.RunID, o.TargetID, o.ProbeID, o.ProbeSHA256, o.Sample, o.RequestSHA256, o.RequestMethod, o.RequestPath, encodeBody(o.RequestBody), o.RequestPinned,
				string(r.Class), string(r.Stage), strings.Join(r.Categories, ","), sig, r.Reason, r.Message, b2i(r.Heuristic),
				strings.Join(r.Unknown, ","), o.HTTPStatus, r.RequestID, r.ModelID, r.ModelFP,
				float64(o.Latency)/1e6, r.TokensIn, r.TokensOut, o.CostUSD, o.Attempts, o.BodySHA256, encodeBody(o.Body), b2i(o.BodyTruncated), ts(o.ObservedAt))
			if err != nil {
				return err
			}
			o.ID, _ = res.LastInsertId()
		}
		return nil
	})
}

// dumpObservations returns every stored observation column, with its
// SQLite storage type, as text.
func dumpObservations(t *testing.T, d *DB) []string {
	t.Helper()
	cols := []string{"id", "run_id", "target_id", "probe_id", "probe_sha256", "sample", "request_sha256", "request_method", "request_path", "request_body", "request_pinned",
		"class", "stage", "categories", "signals", "reason", "message", "heuristic", "unknown", "http_status", "request_id", "model_id", "model_fp",
		"latency_ms", "tokens_in", "tokens_out", "cost_usd", "attempts", "body_sha256", "body", "body_truncated", "observed_at"}
	var sel []string
	for _, c := range cols {
		sel = append(sel, fmt.Sprintf("typeof(%s) || ':' || quote(%s)", c, c))
	}
	rows, err := d.SQL().Query(`SELECT ` + strings.Join(sel, " || '|' || ") + ` FROM observations ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func openTestDB(t testing.TB) *DB {
	t.Helper()
	d, err := Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func setupRun(t testing.TB, d *DB) (runID, targetID int64) {
	t.Helper()
	ctx := context.Background()
	runID, err := d.BeginRun(ctx, Run{CorpusName: "c", CorpusVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	targetID, err = d.EnsureTarget(ctx, TargetRow{Name: "sim", Provider: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	return runID, targetID
}

// TestInsertObservationsStoresLikeRowAtATime inserts batches of sizes
// around the multi-row statement's width and checks that every stored
// column (value and storage type) and every assigned id equal what the
// row-at-a-time insert produced, and that everything reads back.
func TestInsertObservationsStoresLikeRowAtATime(t *testing.T) {
	ctx := context.Background()
	got, want := openTestDB(t), openTestDB(t)
	runG, tgtG := setupRun(t, got)
	runW, tgtW := setupRun(t, want)
	sizes := []int{1, insertRows - 1, insertRows, insertRows + 1, 100, 256, 3}
	total := 0
	for _, n := range sizes {
		a := testObservations(runG, tgtG, n)
		b := testObservations(runW, tgtW, n)
		for i := range a { // distinct probe ids across batches
			a[i].ProbeID = fmt.Sprintf("b%d-%s", total, a[i].ProbeID)
			b[i].ProbeID = a[i].ProbeID
		}
		if n%2 == 1 { // some batches compressed ahead, as the runner does
			for _, o := range a {
				o.CompressBodies()
			}
		}
		if err := got.InsertObservations(ctx, a); err != nil {
			t.Fatalf("insert %d: %v", n, err)
		}
		if err := insertObservationsReference(ctx, want, b); err != nil {
			t.Fatalf("reference insert %d: %v", n, err)
		}
		for i := range a {
			if a[i].ID != b[i].ID || a[i].ID == 0 {
				t.Fatalf("batch of %d, row %d: id %d, want %d", n, i, a[i].ID, b[i].ID)
			}
		}
		// Read back each observation by its id: fields and bodies.
		orig := testObservations(runG, tgtG, n)
		for i, o := range a {
			back, err := got.Observation(ctx, o.ID)
			if err != nil {
				t.Fatal(err)
			}
			w := *orig[i]
			w.ID, w.ProbeID, w.RequestBody, w.Body = o.ID, o.ProbeID, nil, nil
			if len(w.Result.Categories) == 0 {
				w.Result.Categories = nil
			}
			if !reflect.DeepEqual(back, &w) {
				t.Fatalf("batch of %d, row %d read back\n got %+v\nwant %+v", n, i, back, &w)
			}
			rq, rs, err := got.ObservationBodies(ctx, o.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rq, orig[i].RequestBody) || !bytes.Equal(rs, orig[i].Body) {
				t.Fatalf("batch of %d, row %d: bodies differ", n, i)
			}
		}
		total += n
	}
	g, w := dumpObservations(t, got), dumpObservations(t, want)
	if len(g) != total || len(w) != total {
		t.Fatalf("stored %d and %d rows, want %d", len(g), len(w), total)
	}
	for i := range g {
		if g[i] != w[i] {
			t.Fatalf("row %d differs\n got %s\nwant %s", i, g[i], w[i])
		}
	}
	all, err := got.Observations(ctx, runG, 0)
	if err != nil || len(all) != total {
		t.Fatalf("Observations: %d rows, %v", len(all), err)
	}
}

// TestInsertObservationsAtomic checks a failing batch stores nothing: a
// duplicate (run, target, probe, sample) in the last chunk rolls back the
// earlier chunks too.
func TestInsertObservationsAtomic(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	run, tgt := setupRun(t, d)
	obs := testObservations(run, tgt, 2*insertRows+5)
	obs[len(obs)-1].ProbeID, obs[len(obs)-1].Sample = obs[0].ProbeID, obs[0].Sample
	if err := d.InsertObservations(ctx, obs); err == nil {
		t.Fatal("duplicate observation inserted")
	}
	if rows := dumpObservations(t, d); len(rows) != 0 {
		t.Fatalf("%d rows stored by a failed batch", len(rows))
	}
	obs = testObservations(run, tgt, 10)
	if err := d.InsertObservations(ctx, obs); err != nil {
		t.Fatal(err)
	}
	if obs[0].ID != 1 || obs[9].ID != 10 {
		t.Fatalf("ids %d..%d after a rolled-back batch", obs[0].ID, obs[9].ID)
	}
}

// TestCompressBodiesStale checks a body changed after CompressBodies is
// stored as it is when inserted, not as it was compressed.
func TestCompressBodiesStale(t *testing.T) {
	ctx := context.Background()
	d := openTestDB(t)
	run, tgt := setupRun(t, d)
	obs := testObservations(run, tgt, 4)
	o := obs[3]
	o.CompressBodies()
	o.Body = append([]byte(nil), o.Body...)
	o.Body[len(o.Body)-2] = ' '
	o.RequestBody = []byte("short")
	want := append([]byte(nil), o.Body...)
	if err := d.InsertObservations(ctx, obs); err != nil {
		t.Fatal(err)
	}
	rq, rs, err := d.ObservationBodies(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(rq) != "short" || !bytes.Equal(rs, want) {
		t.Fatalf("stale compressed body stored: %q / %q", rq, rs)
	}
}

// BenchmarkInsertObservations stores 5,000 observations in batches of 256,
// as a run's writer does.
func BenchmarkInsertObservations(b *testing.B) {
	benchInsert(b, false)
}

// BenchmarkInsertObservationsPrecompressed is the same with bodies
// compressed beforehand (by the runner's workers): the writer's share.
func BenchmarkInsertObservationsPrecompressed(b *testing.B) {
	benchInsert(b, true)
}

func benchInsert(b *testing.B, pre bool) {
	const n, batch = 5000, 256
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		d, err := Open(ctx, filepath.Join(b.TempDir(), "b.db"))
		if err != nil {
			b.Fatal(err)
		}
		run, tgt := setupRun(b, d)
		obs := testObservations(run, tgt, n)
		if pre {
			for _, o := range obs {
				o.CompressBodies()
			}
		}
		b.StartTimer()
		insertBatches(b, d, obs, batch)
		b.StopTimer()
		d.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/obs")
}

// insertBatches inserts obs in batches of batch observations.
func insertBatches(b *testing.B, d *DB, obs []*Observation, batch int) {
	b.Helper()
	for j := 0; j < len(obs); j += batch {
		if err := d.InsertObservations(context.Background(), obs[j:min(j+batch, len(obs))]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsertObservationsWithHistory is the writer's share in a
// database that already holds 20 runs of 5,000 observations, the steady
// state of a scheduled monitor, with observations arriving in completion
// order rather than probe order.
func BenchmarkInsertObservationsWithHistory(b *testing.B) {
	const n, batch, history = 5000, 256, 20
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(b.TempDir(), "b.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	_, tgt := setupRun(b, d)
	insertRun := func() {
		run, err := d.BeginRun(ctx, Run{CorpusName: "c", CorpusVersion: "1"})
		if err != nil {
			b.Fatal(err)
		}
		obs := testObservations(run, tgt, n)
		for i, o := range obs {
			o.ProbeID = fmt.Sprintf("q%05d", (i*7919)%n)
			o.CompressBodies()
		}
		b.StartTimer()
		insertBatches(b, d, obs, batch)
		b.StopTimer()
	}
	b.StopTimer()
	for i := 0; i < history; i++ {
		insertRun()
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		insertRun()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/obs")
}

// BenchmarkInsertObservationsRowwise is the original row-at-a-time insert,
// for comparison.
func BenchmarkInsertObservationsRowwise(b *testing.B) {
	const n, batch = 5000, 256
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		d, err := Open(ctx, filepath.Join(b.TempDir(), "b.db"))
		if err != nil {
			b.Fatal(err)
		}
		run, tgt := setupRun(b, d)
		obs := testObservations(run, tgt, n)
		b.StartTimer()
		for j := 0; j < n; j += batch {
			if err := insertObservationsReference(ctx, d, obs[j:min(j+batch, n)]); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		d.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/obs")
}

func TestSameSlice(t *testing.T) {
	a := make([]byte, 4, 8)
	empty := []byte{}
	cases := []struct {
		a, b []byte
		want bool
	}{
		{a, a, true},
		{a, a[:3], false},
		{a, a[:4:4], false},
		{a, a[1:], false},
		{a, append([]byte(nil), a...), false},
		{nil, nil, true},
		{empty, nil, false},
		{nil, empty, false},
		{empty, empty, true},
	}
	for i, c := range cases {
		if got := sameSlice(c.a, c.b); got != c.want {
			t.Errorf("case %d: sameSlice = %v, want %v", i, got, c.want)
		}
	}
}

// The full-size INSERT, prepared once per handle, keeps working across
// transactions, after another handle changed the schema (SQLite prepares
// it again), and after Close an insert fails cleanly.
func TestCachedInsertAcrossTransactionsAndSchemaChange(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "t.db")
	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	run, tgt := setupRun(t, d)
	all := testObservations(run, tgt, 3*insertRows+3)
	if err := d.InsertObservations(ctx, all[:insertRows+1]); err != nil {
		t.Fatal(err)
	}
	if d.insertFull == nil {
		t.Fatal("the full-size INSERT was not kept")
	}
	other, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.SQL().ExecContext(ctx, `CREATE INDEX qa_obs_class ON observations (class)`); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if err := d.InsertObservations(ctx, all[insertRows+1:]); err != nil {
		t.Fatalf("after another handle's schema change: %v", err)
	}
	if rows := dumpObservations(t, d); len(rows) != len(all) {
		t.Fatalf("%d rows stored, want %d", len(rows), len(all))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.InsertObservations(ctx, testObservations(run, tgt, insertRows)); err == nil {
		t.Fatal("insert after Close succeeded")
	}
}
