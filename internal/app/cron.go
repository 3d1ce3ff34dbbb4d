package app

import "github.com/robfig/cron/v3"

// cronSpec parses a standard cron expression (with optional CRON_TZ=).
func cronSpec(s string) (cron.Schedule, error) { return cron.ParseStandard(s) }
