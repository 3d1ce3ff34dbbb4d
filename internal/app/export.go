package app

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
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
			return fmt.Errorf("pushgateway: %w", maskPassword(err, pushgateway))
		}
	}
	return nil
}

// maskPassword returns err with the password of rawURL (user:password@)
// shown as "xxxxx" wherever its message repeats it, as url.URL.Redacted
// does: the push client's errors quote the URL it pushed to, and they are
// logged. errors.Is and As still see err.
func maskPassword(err error, rawURL string) error {
	u, perr := url.Parse(rawURL)
	if perr != nil || u.User == nil {
		return err
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		return err
	}
	return masked{err: err, hide: []string{u.String(), rawURL, pw, url.QueryEscape(pw), url.PathEscape(pw)}, with: u.Redacted()}
}

type masked struct {
	err  error
	hide []string // the URL as given and as printed, then the password alone
	with string   // the URL with its password masked
}

func (m masked) Error() string {
	s := m.err.Error()
	for i, h := range m.hide {
		rep := m.with
		if i >= 2 {
			rep = "xxxxx"
		}
		s = strings.ReplaceAll(s, h, rep)
	}
	return s
}

func (m masked) Unwrap() error { return m.err }
