package storage

import (
	"bytes"
	"compress/gzip"
	"context"
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
