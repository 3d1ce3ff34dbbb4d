package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
)

// PushTimeout bounds a push to the Pushgateway: one that accepts the
// connection and never answers must not hold a finished run (and its
// CronJob) open.
const PushTimeout = 30 * time.Second

// ExportMetrics writes reg to a textfile-collector file and/or pushes it to
// a Pushgateway, for one-shot runs that nothing scrapes. The push gives up
// after PushTimeout, or earlier when ctx ends.
func ExportMetrics(ctx context.Context, reg *prometheus.Registry, textfile, pushgateway string) error {
	if textfile != "" {
		if err := os.MkdirAll(filepath.Dir(textfile), 0o755); err != nil {
			return fmt.Errorf("metrics textfile: %w", err)
		}
		if err := prometheus.WriteToTextfile(textfile, reg); err != nil {
			return fmt.Errorf("metrics textfile: %w", err)
		}
	}
	if pushgateway != "" {
		ctx, cancel := context.WithTimeout(ctx, PushTimeout)
		defer cancel()
		if err := push.New(pushgateway, "driftprobe").Gatherer(reg).PushContext(ctx); err != nil {
			return fmt.Errorf("pushgateway: %w", err)
		}
	}
	return nil
}
