package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/driftprobe/driftprobe/internal/testenv"
	"github.com/driftprobe/driftprobe/runner"
)

// A run whose answers can no longer be stored stops sending: every further
// answer would be spend without evidence. The corpus's probes are stored
// by the writer while the first requests are in flight, so their failure
// stops the run the same way. The rate limit paces every probe after the
// first through Options.Sleep, which returns only once the run stops
// sending (or, should it never, at a bound, so that a regression fails
// rather than hangs).
func TestStoreFailureStopsSending(t *testing.T) {
	for _, tc := range []struct{ name, table, want string }{
		{"observations", "observations", "store observations"},
		{"probes", "probes", "storing the corpus's probes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := testenv.New(t, "targets:\n  - {name: s, provider: sim, model: m, concurrency: 1, rate_limit_rpm: 60}\n")
			if _, err := e.Store.SQL().Exec(`CREATE TRIGGER full BEFORE INSERT ON ` + tc.table + ` BEGIN SELECT RAISE(ABORT, 'disk full'); END`); err != nil {
				t.Fatal(err)
			}
			bound, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			sleep := func(ctx context.Context, _ time.Duration) error {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-bound.Done():
					return nil
				}
			}
			r := runner.New(runner.Options{Config: e.Config, Corpus: e.Corpus, Store: e.Store, Targets: e.Targets, Sleep: sleep, BatchSize: 1})
			_, err := r.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "disk full") {
				t.Fatalf("run error %v, want %q … disk full", err, tc.want)
			}
			if n := e.Sim("s").Total(); n > 2 || n == len(e.Corpus.Probes) {
				t.Errorf("%d of %d probes sent after the store failed; want the run to stop sending", n, len(e.Corpus.Probes))
			}
			var running int
			if err := e.Store.SQL().QueryRow(`SELECT COUNT(*) FROM runs WHERE status != 'aborted'`).Scan(&running); err != nil {
				t.Fatal(err)
			}
			if running != 0 {
				t.Errorf("%d run(s) not marked aborted", running)
			}
		})
	}
}
