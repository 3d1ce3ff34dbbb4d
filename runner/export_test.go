package runner_test

import "github.com/driftprobe/driftprobe/probes/sim"

func simScores(body []byte) map[string]float64 { return sim.Scores(body) }
