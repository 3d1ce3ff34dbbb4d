//go:build tools

// Package tools pins module dependencies that packages adopt incrementally.
package tools

import (
	_ "github.com/aws/smithy-go/aws-http-auth/sigv4"
	_ "github.com/cenkalti/backoff/v5"
	_ "github.com/go-co-op/gocron/v2"
	_ "github.com/google/go-github/v60/github"
	_ "github.com/jonboulle/clockwork"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/sony/gobreaker/v2"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/term"
	_ "golang.org/x/time/rate"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
)
