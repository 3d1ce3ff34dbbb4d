package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"

	"github.com/driftprobe/driftprobe/attribution"
)

// PushTimeout bounds a push to the Pushgateway: one that accepts the
// connection and never answers must not hold a finished run (and its
// CronJob) open.
const PushTimeout = 30 * time.Second

// PushJob is the job label of every push to a Pushgateway.
const PushJob = "driftprobe"

// DefaultPushInstance is the instance grouping label of a push when none
// is given: the host name ("unknown" when it cannot be read). A host's
// name is stable under systemd; a Kubernetes Job's pod is named anew for
// every run, so a CronJob must give a stable one (--pushgateway-instance),
// or every run leaves a group of its own behind on the Pushgateway.
func DefaultPushInstance() string {
	if h := Hostname(); h != "" {
		return h
	}
	return "unknown"
}

// ErrPushURLQuery is returned (wrapped) for a Pushgateway URL with a query
// string or a fragment. The push client adds its grouping path
// (/metrics/job/driftprobe/instance/…) to the end of the URL as given, so
// it would land inside the query (or the fragment, which is never sent)
// and the push would go to another path. Credentials go in the user
// information (user:password@, sent as basic auth), a prefix in the path.
var ErrPushURLQuery = errors.New("a query string or fragment (?… or #…) is not supported: the push adds its /metrics/job/… path to the end of the URL; give credentials as user:password@ (basic auth) and a prefix as the URL's path")

// CheckPushURL returns ErrPushURLQuery for a Pushgateway URL with a query
// string or a fragment (even an empty one: "…/?"). The URL itself is not
// repeated: its query may hold a token.
func CheckPushURL(pushgateway string) error {
	if strings.ContainsAny(pushgateway, "?#") {
		return ErrPushURLQuery
	}
	return nil
}

// ExportMetrics writes reg to a textfile-collector file and/or pushes it to
// a Pushgateway, for one-shot runs that nothing scrapes, grouped under the
// host name (ExportMetricsAs with instance "").
func ExportMetrics(ctx context.Context, reg *prometheus.Registry, textfile, pushgateway string) error {
	return ExportMetricsAs(ctx, reg, textfile, pushgateway, "")
}

// ExportMetricsAs is ExportMetrics with the push grouped under
// job="driftprobe" and instance (DefaultPushInstance when ""): PUT
// /metrics/job/driftprobe/instance/INSTANCE replaces only that group, so
// probers sharing a Pushgateway keep their own metrics (without an
// instance every push replaced the last one's, whoever pushed it). The
// push gives up after PushTimeout, or earlier when ctx ends. A Pushgateway
// URL with a query string or fragment is refused (ErrPushURLQuery) without
// pushing; the textfile is written first all the same.
func ExportMetricsAs(ctx context.Context, reg *prometheus.Registry, textfile, pushgateway, instance string) error {
	if textfile != "" {
		if err := os.MkdirAll(filepath.Dir(textfile), 0o755); err != nil {
			return fmt.Errorf("metrics textfile: %w", err)
		}
		if err := prometheus.WriteToTextfile(textfile, reg); err != nil {
			return fmt.Errorf("metrics textfile: %w", err)
		}
	}
	if pushgateway != "" {
		if err := CheckPushURL(pushgateway); err != nil {
			return fmt.Errorf("pushgateway: %w", err)
		}
		ctx, cancel := context.WithTimeout(ctx, PushTimeout)
		defer cancel()
		if instance == "" {
			instance = DefaultPushInstance()
		}
		if err := push.New(pushgateway, PushJob).Grouping("instance", instance).Gatherer(reg).PushContext(ctx); err != nil {
			return fmt.Errorf("pushgateway: %w", maskPassword(err, pushgateway))
		}
	}
	return nil
}

// maskPassword returns err with the credentials of rawURL — the user
// information (user:password@, or a token as the user name), the Basic
// credential the push sends for it (base64 of user:password) and the
// values of its query — shown as "xxxxx" wherever its message repeats
// them, raw or escaped (attribution.MaskSecrets; the Prometheus client of
// attribute masks the same way): the push client's errors quote the URL
// it pushed to and the Pushgateway's answer, and they are logged.
// errors.Is and As still see err.
func maskPassword(err error, rawURL string) error {
	return attribution.MaskError(err, "xxxxx", attribution.URLSecrets(rawURL))
}
