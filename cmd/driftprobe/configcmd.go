package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/termtext"
)

func newConfigCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "config", Short: "Inspect the configuration"}
	noKeys := false
	check := &cobra.Command{
		Use:   "check",
		Short: "Validate the configuration (and the corpus it names) without running",
		Long: `Validate the configuration file strictly: unknown fields, wrong types, duplicate
target names, unknown providers, bad schedules, and (unless --no-keys) missing
key environment variables are reported as FILE:LINE: FIELD: problem, every
problem of the file at once, in file order, exit 2.
Warnings (a plain-http base_url off loopback that would carry a key or token;
an anthropic, gemini or mistral base_url ending in the API version its adapter
appends itself, e.g. https://api.anthropic.com/v1; any base_url ending in a full
endpoint the adapter appends its path to, e.g. .../v1/chat/completions; an
openai base_url whose path does not end in /v1; unless --no-keys, a github
block whose token variable is unset, and a database whose directory does not
exist) go to stderr
and keep exit 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := app.LoadConfig(g.config, g.db, !noKeys)
			if err != nil {
				// When the only problems are unset key variables, the
				// corpus's problems are reported with them: one round of
				// fixes, not two.
				if !noKeys {
					if nk, nkErr := app.LoadConfig(g.config, g.db, false); nkErr == nil {
						if _, cErr := app.LoadCorpus(nk, "", false); cErr != nil {
							return errors.Join(err, cErr)
						}
					}
				}
				return err
			}
			cp, err := app.LoadCorpus(cfg, "", false)
			if err != nil {
				return err
			}
			// What run would refuse before opening it (--db naming a
			// directory; the config's own database: is checked at its line).
			if err := app.CheckDatabasePath(cfg); err != nil {
				return err
			}
			src := cfg.File
			if src == "" {
				src = "built-in config"
			}
			targets := termtext.Count(len(cfg.Enabled()), "target", "targets")
			if off := len(cfg.Targets) - len(cfg.Enabled()); off > 0 {
				targets += fmt.Sprintf(", %d disabled", off) // counted apart: a run sends to none of them
			}
			fmt.Fprintf(g.stdout, "%s: ok (%s, corpus %s %s with %s, schedule %q, database %s)\n",
				src, targets, cp.Name, cp.Version, termtext.Count(len(cp.Probes), "probe", "probes"), cfg.Schedule, cfg.Database)
			warnings := cfg.Warnings()
			if !noKeys {
				warnings = append(warnings, cfg.KeyWarnings(os.Getenv)...)
				// Like the keys, the database's directory belongs to the
				// host the config is checked on: run and serve create
				// the file, never its directory (exit 3).
				if dir := filepath.Dir(cfg.Database); cfg.Database != "" {
					if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
						warnings = append(warnings, fmt.Sprintf("database %s: its directory %s does not exist: a run would exit 3 (create it, or correct the path)", cfg.Database, dir))
					}
				}
			}
			for _, w := range warnings {
				fmt.Fprintf(g.stderr, "driftprobe: warning: %s\n", w)
			}
			return nil
		},
	}
	check.Flags().BoolVar(&noKeys, "no-keys", false, "do not require key environment variables to be set")
	c.AddCommand(check)
	return c
}
