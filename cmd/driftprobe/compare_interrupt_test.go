package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// compare --run interrupted (SIGINT/SIGTERM cancel its context) mid-run:
// the run is recorded aborted and nothing is compared. It said so as run
// does ("run N aborted (interrupted)"), in the {"run_id", "status",
// "error"} document with --json, instead of "compare: context canceled"
// from the reads that followed. The interruption is the provider's first
// request cancelling the context: no timing involved.
func TestCompareRunInterruptedSaysAborted(t *testing.T) {
	for _, asJSON := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cancel()
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
		}))
		dir := t.TempDir()
		cfg := writeFile(t, dir, "c.yaml", `
targets:
  - {name: cur, provider: sim, model: sim-large, base_url: `+srv.URL+`}
  - {name: cand, provider: sim, model: sim-xl, base_url: `+srv.URL+`}
`)
		args := []string{"compare", "--run", "--from", "cur", "--to", "cand", "--config", cfg, "--db", filepath.Join(dir, "d.db")}
		if asJSON {
			args = append(args, "--json")
		}
		var out, errb bytes.Buffer
		code := Run(ctx, args, &out, &errb)
		srv.Close()
		cancel()
		if code != 3 || !strings.Contains(errb.String(), "run 1 aborted (interrupted)") || strings.Contains(errb.String(), "context canceled") {
			t.Errorf("json %v: exit %d, stderr %s", asJSON, code, errb.String())
		}
		if !asJSON {
			continue
		}
		var doc struct {
			RunID  int64  `json:"run_id"`
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.RunID != 1 || doc.Status != "aborted" || !strings.Contains(doc.Error, "nothing was compared") {
			t.Errorf("stdout %q (%v): want the run's failure document, aborted", out.String(), err)
		}
	}
}
