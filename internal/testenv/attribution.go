package testenv

import "time"

// AttributionT0 is the injected start of run 1 in attribution tests; run i
// starts (i-1) hours later, in step with the hourly Prometheus fixtures
// (attribution/testdata/prometheus/e2e_*.json).
var AttributionT0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

// AttributionConfig is the attribution tests' config: sim-a's provider
// tightens violence from run 4 (the event is first seen in run 4 and
// confirmed in run 5, confirm_runs being 2); sim-b never changes.
const AttributionConfig = `
confirm_runs: 2
targets:
  - name: sim-a
    provider: sim
    model: sim-large
    sim:
      policies:
        - from_run: 4
          thresholds: {violence: 0.3}
  - {name: sim-b, provider: sim, model: sim-small}
`
