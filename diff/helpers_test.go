package diff_test

import (
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/testenv"
)

func corpusReload(e *testenv.Env) (*corpus.Corpus, error) {
	return app.LoadCorpus(e.Config, "", true)
}
