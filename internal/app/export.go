package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
)

// ExportMetrics writes reg to a textfile-collector file and/or pushes it to
// a Pushgateway, for one-shot runs that nothing scrapes.
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
		if err := push.New(pushgateway, "driftprobe").Gatherer(reg).PushContext(ctx); err != nil {
			return fmt.Errorf("pushgateway: %w", err)
		}
	}
	return nil
}
