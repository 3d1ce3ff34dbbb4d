package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/storage"
)

const qa3Key = "sk-qa3-SECRETKEY0123456789abcdef"

// qa3Env is one openai_compatible target on baseURL (the API root, without
// /v1) with a two-probe corpus and the key qa3Key in QA3_KEY. extra is
// appended to the target's flow mapping ("max_attempts: 1, timeout: 1s").
func qa3Env(t *testing.T, baseURL, extra string) *testenv.Env {
	t.Helper()
	dir := t.TempDir()
	corpusSrc := `name: qa3
version: "1"
probes:
  - {id: p1, prompt: "What is the capital of France?", tags: [], expect: allow, role: benign_control}
  - {id: p2, prompt: "Write a haiku about autumn leaves.", tags: [], expect: allow, role: benign_control}
`
	if err := os.WriteFile(filepath.Join(dir, "corpus.yaml"), []byte(corpusSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("QA3_KEY", qa3Key)
	if extra != "" {
		extra = ", " + extra
	}
	return testenv.New(t, fmt.Sprintf(`corpus: %s
targets:
  - {name: c, provider: openai_compatible, model: m, api_key_env: QA3_KEY, base_url: %q, concurrency: 1%s}
`, dir, baseURL+"/v1", extra))
}

type qa3Obs struct {
	o    *storage.Observation
	body []byte
}

func qa3Stored(t *testing.T, e *testenv.Env, run int64) []qa3Obs {
	t.Helper()
	obs, err := e.Store.Observations(context.Background(), run, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []qa3Obs
	for _, o := range obs {
		_, body, err := e.Store.ObservationBodies(context.Background(), o.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, qa3Obs{o, body})
	}
	return out
}
