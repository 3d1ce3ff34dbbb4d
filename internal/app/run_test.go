package app_test

import (
	"context"
	"testing"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/storage"
)

// A process killed mid-run leaves its run "running"; the next run, holding
// the lease, records it as aborted, and run ids keep counting.
func TestDeadRunMarkedAborted(t *testing.T) {
	e := testenv.New(t, "targets:\n  - {name: a, provider: sim, model: m}\n")
	ctx := context.Background()
	id, err := e.Store.BeginRun(ctx, storage.Run{CorpusName: "default", CorpusVersion: e.Corpus.Version, CorpusHash: e.Corpus.Hash})
	if err != nil {
		t.Fatal(err)
	}
	res := e.Run()
	if res.Summary.RunID != id+1 || res.Summary.Status != storage.RunComplete {
		t.Fatalf("run %d %s", res.Summary.RunID, res.Summary.Status)
	}
	dead, err := e.Store.Run(ctx, id)
	if err != nil || dead.Status != storage.RunAborted || dead.Note == "" {
		t.Fatalf("dead run %+v %v, want aborted with a note", dead, err)
	}
}
