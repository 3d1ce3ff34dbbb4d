package storage

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
)

// A small response body that happens to start with the gzip magic bytes (a
// provider's garbage, or gzip sent without Content-Encoding) must read
// back exactly as received: evidence hashes the stored bytes.
func TestSmallGzipLookalikeBodyRoundTrips(t *testing.T) {
	d := openTestDB(t)
	runID, targetID := setupRun(t, d)
	var real bytes.Buffer
	w := gzip.NewWriter(&real)
	w.Write([]byte(`{"ok":true}`))
	w.Close()
	bodies := [][]byte{
		{0x1f, 0x8b, 0x00, 0x01, 0x02, 0x03}, // not a valid gzip stream
		real.Bytes(),                         // a valid one: must not come back decompressed
	}
	for i, body := range bodies {
		o := &Observation{RunID: runID, TargetID: targetID, ProbeID: "p", Sample: i, RequestSHA256: "x", Body: body}
		if err := d.InsertObservations(context.Background(), []*Observation{o}); err != nil {
			t.Fatal(err)
		}
		_, got, err := d.ObservationBodies(context.Background(), o.ID)
		if err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
		if !bytes.Equal(got, body) {
			t.Errorf("body %d read back as %q, stored %q", i, got, body)
		}
	}
}

// Processes opening one database at once (a daemon and a CLI command
// after an upgrade) apply each migration exactly once: none fails with
// "table already exists" or "duplicate column".
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	for round := 0; round < 5; round++ {
		path := filepath.Join(t.TempDir(), "c.db")
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := Open(context.Background(), path)
				if err != nil {
					errs <- err
					return
				}
				d.Close()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: concurrent open: %v", round, err)
		}
	}
}

// A damaged stored body does not hide the other side of the observation:
// ReadBodies names the damaged side and decodes the other, and
// ObservationBodies fails as before.
func TestReadBodiesKeepsTheIntactSide(t *testing.T) {
	d := openTestDB(t)
	ctx := context.Background()
	runID, targetID := setupRun(t, d)
	req := bytes.Repeat([]byte(`{"messages":"a request"}`), 100) // compressed when stored
	resp := bytes.Repeat([]byte(`{"choices":"an answer"}`), 100)
	o := &Observation{RunID: runID, TargetID: targetID, ProbeID: "p", RequestSHA256: "x", RequestBody: req, Body: resp}
	if err := d.InsertObservations(ctx, []*Observation{o}); err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"body", "request_body"} {
		// Damage one side (the previous iteration's damage is undone).
		if _, err := d.SQL().Exec(`UPDATE observations SET request_body = ?, body = ? WHERE id = ?`, encodeBody(req), encodeBody(resp), o.ID); err != nil {
			t.Fatal(err)
		}
		bad := encodeBody(map[string][]byte{"body": resp, "request_body": req}[col])
		bad[len(bad)/2] ^= 0xff
		if _, err := d.SQL().Exec(`UPDATE observations SET `+col+` = ? WHERE id = ?`, bad, o.ID); err != nil {
			t.Fatal(err)
		}
		b, err := d.ReadBodies(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if col == "body" {
			if !IsUnreadableBody(b.ResponseErr) || b.Response != nil || b.RequestErr != nil || !bytes.Equal(b.Request, req) {
				t.Errorf("damaged response: %+v", b)
			}
		} else if !IsUnreadableBody(b.RequestErr) || b.Request != nil || b.ResponseErr != nil || !bytes.Equal(b.Response, resp) {
			t.Errorf("damaged request: %+v", b)
		}
		if _, _, err := d.ObservationBodies(ctx, o.ID); !IsUnreadableBody(err) {
			t.Errorf("%s damaged: ObservationBodies err %v", col, err)
		}
	}
}

// A run another process finished (it took over this one's lease and marked
// it aborted) gains no observations: an answer still in flight when the
// paused process resumed is refused with ErrRunFinished.
func TestInsertIntoFinishedRunRefused(t *testing.T) {
	d := openTestDB(t)
	ctx := context.Background()
	runID, targetID := setupRun(t, d)
	if err := d.FinishRun(ctx, runID, RunAborted, nil); err != nil {
		t.Fatal(err)
	}
	o := &Observation{RunID: runID, TargetID: targetID, ProbeID: "p", RequestSHA256: "x"}
	if err := d.InsertObservations(ctx, []*Observation{o}); !errors.Is(err, ErrRunFinished) {
		t.Fatalf("insert into an aborted run: %v, want ErrRunFinished", err)
	}
	var n int
	if err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM observations WHERE run_id = ?`, runID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d observations in the aborted run (%v)", n, err)
	}
}
