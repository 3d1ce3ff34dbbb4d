package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run in which no target answers a single probe with a verdict (a
// revoked key: every answer a 401; an unreachable provider) is stored and
// printed, but exits 3: a cron job or CI step must not read it as a
// success. One target measuring something is enough for exit 0.
func TestRunMeasuringNothingFails(t *testing.T) {
	revoked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
	}))
	defer revoked.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	write := func(targets string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte("database: "+filepath.Join(dir, "d.db")+"\ntargets:\n"+targets), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dead := "  - {name: dead, provider: openai_compatible, model: m, base_url: \"" + revoked.URL + "/v1\"}\n"

	write(dead)
	stdout, stderr, code := runIn(t, "run", "--json", "--no-progress", "--config", cfg)
	var out struct {
		RunID   int64 `json:"run_id"`
		Targets []struct {
			Verdicts map[string]int `json:"verdicts"`
		} `json:"targets"`
	}
	if code != 3 || !strings.Contains(stderr, "run 1 measured nothing") || !strings.Contains(stderr, "62 client errors") {
		t.Fatalf("every answer a 401: exit %d, stderr %q; want exit 3 saying so", code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || out.RunID != 1 || out.Targets[0].Verdicts["client_error"] != 62 {
		t.Fatalf("the run's JSON is still printed: %v %+v\n%s", err, out, stdout)
	}

	write(dead + "  - {name: sim-a, provider: sim, model: sim-large}\n")
	if _, stderr, code := runIn(t, "run", "--json", "--no-progress", "--config", cfg); code != 0 {
		t.Fatalf("one target measured: exit %d, stderr %q; want 0", code, stderr)
	}
}
