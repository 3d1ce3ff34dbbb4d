// Package testenv builds whole driftprobe systems in-process for tests: a
// config from YAML, the corpus, a temporary SQLite database and real
// probers (the sim over loopback HTTP). Sleeps are recorded, never slept.
package testenv

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes/sim"
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// Env is a running system.
type Env struct {
	T       testing.TB
	Dir     string
	Config  *config.Config
	Corpus  *corpus.Corpus
	Store   *storage.DB
	Targets []*runner.Target
	close   func()

	mu     sync.Mutex
	Sleeps []time.Duration
}

// New builds an Env from a config YAML (its database is replaced by a
// temporary file). corpusDir "" uses the config's corpus or the default.
func New(t testing.TB, yaml string) *Env {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file, true)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cfg.Database = filepath.Join(dir, "test.db")
	e := &Env{T: t, Dir: dir, Config: cfg}
	e.Reload()
	t.Cleanup(e.Close)
	return e
}

// Reload (re)opens the store, corpus and probers, as a restarted process
// would.
func (e *Env) Reload() {
	e.T.Helper()
	e.Close()
	var err error
	if e.Corpus, err = app.LoadCorpus(e.Config, "", false); err != nil { // RunOnce locks a new version, as in production
		e.T.Fatalf("corpus: %v", err)
	}
	if e.Store, err = storage.Open(context.Background(), e.Config.Database); err != nil {
		e.T.Fatalf("store: %v", err)
	}
	if e.Targets, e.close, err = app.BuildTargets(e.Config); err != nil {
		e.T.Fatalf("targets: %v", err)
	}
}

// Rebuild applies a change made to e.Config (a target's base_url, sim
// settings, disabled) as a restarted process would (Reload), keeping the
// corpus loaded: the same probes, so only what the config changed differs.
func (e *Env) Rebuild() {
	e.T.Helper()
	cp := e.Corpus
	e.Reload()
	e.Corpus = cp
}

// SimServer starts an embedded simulator with default settings on
// loopback for the test's lifetime and returns its URL: an endpoint a
// target's base_url can name, or move to.
func SimServer(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(sim.NewServer(sim.Config{}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Close releases everything.
func (e *Env) Close() {
	if e.close != nil {
		e.close()
		e.close = nil
	}
	if e.Store != nil {
		e.Store.Close()
		e.Store = nil
	}
}

// Sleep records a wait instead of sleeping.
func (e *Env) Sleep(ctx context.Context, d time.Duration) error {
	e.mu.Lock()
	e.Sleeps = append(e.Sleeps, d)
	e.mu.Unlock()
	return ctx.Err()
}

// Run performs one run with recorded sleeps.
func (e *Env) Run() *app.RunResult {
	e.T.Helper()
	return e.RunCtx(context.Background())
}

// RunCtx performs one run under ctx.
func (e *Env) RunCtx(ctx context.Context) *app.RunResult {
	e.T.Helper()
	res, err := app.RunOnce(ctx, e.Config, e.Corpus, e.Store, e.Targets, app.RunOptions{Sleep: e.Sleep})
	if err != nil {
		e.T.Fatalf("run: %v", err)
	}
	return res
}

// Runs performs n runs and returns the last result.
func (e *Env) Runs(n int) *app.RunResult {
	e.T.Helper()
	var r *app.RunResult
	for i := 0; i < n; i++ {
		r = e.Run()
	}
	return r
}

// Sim returns the in-process sim server of a target.
func (e *Env) Sim(name string) *sim.Server {
	for _, t := range e.Targets {
		if t.Config.Name == name {
			if p, ok := t.Prober.(*sim.Prober); ok {
				return p.Server()
			}
		}
	}
	e.T.Fatalf("no sim target %s", name)
	return nil
}

// Target returns a built target by name.
func (e *Env) Target(name string) *runner.Target {
	for _, t := range e.Targets {
		if t.Config.Name == name {
			return t
		}
	}
	e.T.Fatalf("no target %s", name)
	return nil
}
