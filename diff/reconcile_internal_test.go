package diff

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// A database an older driftprobe wrote can hold an open policy event whose
// evidence is a probe its state already marks nondeterministic (older
// releases withdrew nothing): the next run withdraws it, and the event,
// left without evidence, is retracted.
func TestAlreadyNondeterministicProbeIsWithdrawn(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tid, err := db.EnsureTarget(ctx, storage.TargetRow{Name: "a", Provider: "sim", Model: "m", Endpoint: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	sha := "1111111111111111111111111111111111111111111111111111111111111111"
	run := func(verdict string) {
		t.Helper()
		id, err := db.BeginRun(ctx, storage.Run{CorpusName: "c", CorpusVersion: "1", CorpusHash: "h"})
		if err != nil {
			t.Fatal(err)
		}
		k := ParseKey(verdict)
		o := &storage.Observation{RunID: id, TargetID: tid, ProbeID: "p", ProbeSHA256: sha, RequestSHA256: sha,
			Result: probes.Result{Class: k.Class, Categories: k.Categories, ModelID: "m"}, Attempts: 1, ObservedAt: time.Unix(0, 0)}
		if err := db.InsertObservations(ctx, []*storage.Observation{o}); err != nil {
			t.Fatal(err)
		}
		if _, err := Apply(ctx, db, Input{RunID: id, CorpusVersion: "1", CorpusHash: "h",
			Targets: []TargetRun{{ID: tid, Name: "a", Provider: "sim", Status: storage.TargetComplete, Observations: []*storage.Observation{o}}},
			Params:  Params{ConfirmRuns: 2, NondeterministicFlips: 2, WindowRuns: 3}}); err != nil {
			t.Fatal(err)
		}
	}
	run("allowed|")
	run("allowed|")
	run("blocked_output|hate")
	run("blocked_output|hate") // an open policy_change, p its evidence
	// As an older driftprobe left it: p marked nondeterministic, still in
	// the open event.
	err = db.Tx(ctx, func(tx *sql.Tx) error {
		states, err := loadStates(ctx, tx, tid)
		if err != nil {
			return err
		}
		states["p"].nondeterministic = true
		return saveStates(ctx, tx, tid, 4, states, true)
	})
	if err != nil {
		t.Fatal(err)
	}
	run("blocked_output|hate")
	evs, err := ListEvents(ctx, db, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != KindPolicy || evs[0].Status != StatusReverted || !evs[0].Probes[0].Withdrawn ||
		evs[0].Updates[len(evs[0].Updates)-1].Change != ChangeRetracted {
		t.Fatalf("events %+v: want the policy event retracted, p withdrawn", evs)
	}
}
