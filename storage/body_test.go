package storage

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
)

func gzipped(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func s2Streamed(b []byte) []byte {
	var buf bytes.Buffer
	w := s2.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// Bodies worth compressing are stored as S2 streams, smaller than they
// came, and read back byte-exact; short ones are stored as they are.
func TestBodyStoredForms(t *testing.T) {
	large := []byte(`{"choices":[` + strings.Repeat(`{"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}},`, 40) + `{}]}`)
	small := []byte(`{"error":{"message":"blocked"}}`)
	d := openTestDB(t)
	runID, targetID := setupRun(t, d)
	o := &Observation{RunID: runID, TargetID: targetID, ProbeID: "p", RequestSHA256: "x", RequestBody: small, Body: large}
	if err := d.InsertObservations(context.Background(), []*Observation{o}); err != nil {
		t.Fatal(err)
	}
	var storedReq, storedBody []byte
	if err := d.db.QueryRow(`SELECT request_body, body FROM observations WHERE id = ?`, o.ID).Scan(&storedReq, &storedBody); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(storedReq, small) {
		t.Errorf("short request body stored as %q, want it as it is", storedReq)
	}
	if !s2Stream(storedBody) || len(storedBody) >= len(large)/2 {
		t.Errorf("large body stored as %d bytes starting %q, want an S2 stream under half of %d", len(storedBody), storedBody[:min(12, len(storedBody))], len(large))
	}
	req, body, err := d.ObservationBodies(context.Background(), o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(req, small) || !bytes.Equal(body, large) {
		t.Errorf("bodies read back changed: %q / %q", req, body)
	}
}

// Databases written before S2 hold gzip streams: they still read.
func TestLegacyGzipBodiesRead(t *testing.T) {
	d := openTestDB(t)
	runID, targetID := setupRun(t, d)
	req, body := []byte(`{"model":"m"}`), []byte(strings.Repeat(`{"a":1}`, 300))
	o := &Observation{RunID: runID, TargetID: targetID, ProbeID: "p", RequestSHA256: "x"}
	if err := d.InsertObservations(context.Background(), []*Observation{o}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.Exec(`UPDATE observations SET request_body = ?, body = ? WHERE id = ?`, gzipped(t, req), gzipped(t, body), o.ID); err != nil {
		t.Fatal(err)
	}
	gotReq, gotBody, err := d.ObservationBodies(context.Background(), o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotReq, req) || !bytes.Equal(gotBody, body) {
		t.Errorf("legacy gzip bodies read back as %q / %q", gotReq, gotBody)
	}
}

// A stored form that is damaged is an error, never a wrong body.
func TestDamagedStoredBody(t *testing.T) {
	z := encodeBody(bytes.Repeat([]byte("abcdefgh"), 400))
	z[len(z)-3] ^= 0xff // inside the checksummed block
	if _, err := decodeBody(z); err == nil {
		t.Error("a damaged S2 stream decoded without error")
	}
	if _, err := decodeBody(append(append([]byte(nil), s2Magic...), 1, 2, 3)); err == nil {
		t.Error("a truncated S2 stream decoded without error")
	}
}

// FuzzBody: every body, whatever its bytes, reads back exactly as stored.
func FuzzBody(f *testing.F) {
	f.Add([]byte(nil))
	f.Add([]byte{})
	f.Add([]byte(`{"ok":true}`))
	f.Add([]byte{0x1f, 0x8b, 0x00})
	f.Add(gzipped(f, []byte(`{"ok":true}`)))
	f.Add(append([]byte(nil), s2Magic...))
	f.Add(s2Streamed([]byte(`{"ok":true}`)))
	f.Add(bytes.Repeat([]byte(`{"k":"v"},`), 200))
	f.Fuzz(func(t *testing.T, b []byte) {
		z := encodeBody(b)
		if b == nil {
			if z != nil {
				t.Fatalf("nil stored as %q", z)
			}
			return
		}
		got, err := decodeBody(z)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !bytes.Equal(got, b) {
			t.Fatalf("read back %q, want %q", got, b)
		}
	})
}
