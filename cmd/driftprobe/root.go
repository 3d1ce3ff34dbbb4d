package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/termtext"
)

// Exit codes.
const (
	exitOK      = 0
	exitGate    = 1
	exitUsage   = 2
	exitRuntime = 3
)

// gateError is returned by commands whose gate failed (exit 1).
type gateError struct{ msg string }

func (e *gateError) Error() string { return e.msg }

// globals are the persistent flags.
type globals struct {
	config   string
	db       string
	logLevel string
	stdout   io.Writer
	stderr   io.Writer
	// hup delivers SIGHUP, caught since the process started (nil: not
	// caught, as in tests); hangup stops a command other than serve.
	hup    <-chan os.Signal
	hangup context.CancelFunc
}

// Run executes the CLI with args and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runHUP(ctx, args, stdout, stderr, nil)
}

// runHUP is Run with SIGHUP delivered on hup: serve reloads on it, any
// other command stops as on SIGTERM.
func runHUP(ctx context.Context, args []string, stdout, stderr io.Writer, hup <-chan os.Signal) int {
	ctx, hangup := context.WithCancel(ctx)
	defer hangup()
	g := &globals{stdout: stdout, stderr: stderr, hup: hup, hangup: hangup}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ge *gateError
	switch {
	case errors.As(err, &ge):
		fmt.Fprintln(stderr, "driftprobe: "+errText(err))
		return exitGate
	case app.IsUsage(err) || isCobraUsage(err) || strings.HasPrefix(err.Error(), "unknown command"):
		fmt.Fprintln(stderr, errText(oneLineSuggestions(err)))
		return exitUsage
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		// SIGINT/SIGTERM before the command got far enough to say more
		// ("begin: context canceled" says nothing to an operator).
		fmt.Fprintln(stderr, "driftprobe: interrupted by a signal before it finished ("+errText(err)+")")
		return exitRuntime
	default:
		fmt.Fprintln(stderr, "driftprobe: "+errText(err))
		return exitRuntime
	}
}

// oneLineSuggestions rewrites cobra's own unknown-command error for a
// top-level command ("unknown command \"runn\" for \"driftprobe\"\n\nDid you
// mean this?\n\trun\n") as the group commands word theirs, on one line
// ("…; did you mean run?"): errText would otherwise show its tab as a
// literal \t. Any other error is returned as it is.
func oneLineSuggestions(err error) error {
	msg, sugg, ok := strings.Cut(err.Error(), "\n\nDid you mean this?\n")
	if !ok || !strings.HasPrefix(msg, "unknown command") {
		return err
	}
	if s := strings.Fields(sugg); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return errors.New(msg)
}

// errText is err's text as the terminal gets it: every line made safe
// (termtext.SafeLong: no control, escape or bidi character, escapes already
// in the text kept as they are), the lines kept. An error may carry a
// file's own text (a config's or corpus's unknown field name, which YAML
// lets carry "\e"), a provider's or GitHub's.
func errText(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = termtext.SafeLong(l)
	}
	return strings.Join(lines, "\n")
}

// cobraUsage wraps flag and argument errors from cobra.
type cobraUsage struct{ error }

func isCobraUsage(err error) bool {
	var c cobraUsage
	return errors.As(err, &c)
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "driftprobe",
		Short: "Continuous policy-drift monitor for LLM providers",
		Long: `driftprobe sends a versioned corpus of byte-identical probe prompts to every
configured provider and model, records each verdict (allowed, blocked at input,
blocked at output, refused, account-level enforcement) in SQLite, and flags
verdict flips. Because the probe bytes never change, a confirmed flip is
evidence that the provider changed, not that your customers' content did.

Without --config (or DRIFTPROBE_CONFIG) it uses a built-in configuration that
probes the embedded simulator: no keys, no network.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cobraUsage{fmt.Errorf("%s: %w\nRun '%s --help' for usage.", c.CommandPath(), err, c.CommandPath())}
	})
	pf := root.PersistentFlags()
	pf.StringVarP(&g.config, "config", "c", os.Getenv("DRIFTPROBE_CONFIG"), "config file (default: $DRIFTPROBE_CONFIG, else the built-in simulator config)")
	pf.StringVar(&g.db, "db", "", "SQLite database file (overrides the config's database)")
	pf.StringVar(&g.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	// Checked before any command runs (no subcommand sets its own
	// persistent hook, which would replace this one).
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if err := checkLogLevel(c, g.logLevel); err != nil {
			return err
		}
		// net/http writes some diagnostics to the standard logger, bytes
		// an upstream sent included: keys redacted there too, GitHub's
		// credentials as delivery learns them among them.
		app.InstallStdLog(g.stderr)
		ghissue.SetCredentialHook(app.RememberSecret)
		if g.hup != nil && c.Name() != "serve" {
			// Only serve reloads; to any other command a hangup means stop.
			go func() {
				select {
				case <-g.hup:
					g.hangup()
				case <-c.Context().Done():
				}
			}()
		}
		return checkUnused(c)
	}
	root.AddCommand(
		newRunCmd(g),
		newEventsCmd(g),
		newDiffCmd(g),
		newCompareCmd(g),
		noConfig(newDemoCmd(g)),
		newServeCmd(g),
		newOutboxCmd(g),
		newEvidenceCmd(g),
		newCorpusCmd(g),
		noConfig(newSimCmd(g)),
		newConfigCmd(g),
		noConfig(newProvidersCmd(g)),
		newPlanCmd(g),
		newReplayCmd(g),
		newAttributeCmd(g),
		newDBCmd(g),
		noConfig(newVersionCmd(g)),
	)
	// cobra adds its help and completion commands when it executes; added
	// here instead, they are refused like any other unknown subcommand
	// (cobra's would print help and exit 0 for "help bogus" or "completion
	// tcsh"). The completion scripts are written where SetOut says, at
	// the time they are created.
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		wrapArgs(c)
		switch {
		case c.Name() == "completion":
			completionCommand(c)
		case c.Name() == "help":
			helpCommand(c)
		case c.HasSubCommands() && !c.Runnable():
			groupCommand(c)
		}
	}
	return root
}

// completionCommand makes cobra's completion command refuse a shell it has
// no script for as a usage error (exit 2); alone it still prints its help.
func completionCommand(c *cobra.Command) {
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		var shells []string
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				shells = append(shells, s.Name())
			}
		}
		return app.Usage(fmt.Errorf("%s: unknown shell %q: want %s", c.CommandPath(), args[0], strings.Join(shells, ", ")))
	}
}

// helpCommand makes cobra's help command refuse a topic that names no
// command ("help bogus", "help db bogus") as a usage error (exit 2): cobra's
// prints the usage and exits 0.
func helpCommand(c *cobra.Command) {
	orig := c.Run
	c.Run = nil
	c.RunE = func(c *cobra.Command, args []string) error {
		cmd, rest, err := c.Root().Find(args)
		if cmd == nil || err != nil || len(rest) > 0 {
			parent := c.Root()
			if cmd != nil && err == nil {
				parent = cmd
			}
			msg := fmt.Sprintf("%s: unknown help topic %q", c.CommandPath(), strings.Join(args, " "))
			if len(args) > 0 {
				bad := args[len(args)-1]
				if len(rest) > 0 {
					bad = rest[0]
				}
				if s := parent.SuggestionsFor(bad); len(s) > 0 {
					msg += "; did you mean " + strings.Join(s, " or ") + "?"
				}
			}
			return app.Usage(fmt.Errorf("%s\nRun '%s' for the commands.", msg, c.CommandPath()))
		}
		orig(c, args)
		return nil
	}
}

// logLevels are the values --log-level accepts (as slog names them).
var logLevels = []string{"debug", "info", "warn", "error"}

// checkLogLevel refuses a --log-level that is not one of logLevels (any
// case), as a usage error.
func checkLogLevel(c *cobra.Command, level string) error {
	for _, l := range logLevels {
		if strings.EqualFold(level, l) {
			return nil
		}
	}
	return cobraUsage{fmt.Errorf("%s: invalid argument %q for \"--log-level\" flag: want %s\nRun '%s --help' for usage.",
		c.CommandPath(), level, strings.Join(logLevels, ", "), c.CommandPath())}
}

// ignoresConfig annotates commands that read neither a config nor a
// database: --config or --db given to them is refused rather than ignored.
const ignoresConfig = "driftprobe/ignores-config"

// noConfig marks c as reading neither --config nor --db (see
// ignoresConfig).
func noConfig(c *cobra.Command) *cobra.Command {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[ignoresConfig] = "true"
	// Its help leaves out the global --config and --db it refuses.
	c.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		for _, name := range []string{"config", "db"} {
			if f := cmd.InheritedFlags().Lookup(name); f != nil && !f.Hidden {
				f.Hidden = true
				defer func() { f.Hidden = false }()
			}
		}
		cmd.Root().HelpFunc()(cmd, args)
	})
	return c
}

// checkUnused refuses --config or --db given to a command that would
// ignore it (a user who passes --db to demo expects that database used),
// and an empty --config, --db, --listen or --dir.
func checkUnused(c *cobra.Command) error {
	// An empty --db or --config (an unset variable in a unit file,
	// --db "$DB") would silently fall back to the default database or
	// config: refuse it. So is DRIFTPROBE_CONFIG set but blank, unless
	// --config says otherwise.
	// The same for an empty --listen (it would listen on every interface
	// at a random port) and demo's --dir (a temporary directory).
	for _, name := range []string{"config", "db", "listen", "dir"} {
		if f := c.Flags().Lookup(name); f != nil && f.Changed && strings.TrimSpace(f.Value.String()) == "" {
			what := "a file"
			switch name {
			case "listen":
				what = "an address"
			case "dir":
				what = "a directory"
			}
			return cobraUsage{fmt.Errorf("%s: --%s is empty (give %s, or leave the flag out for the default)", c.CommandPath(), name, what)}
		}
	}
	if v, set := os.LookupEnv("DRIFTPROBE_CONFIG"); set && strings.TrimSpace(v) == "" && c.Annotations[ignoresConfig] == "" {
		if f := c.Flags().Lookup("config"); f == nil || !f.Changed {
			return cobraUsage{fmt.Errorf("%s: DRIFTPROBE_CONFIG is set but empty (name a config file, or unset it for the built-in simulator config)", c.CommandPath())}
		}
	}
	if c.Annotations[ignoresConfig] == "" {
		return nil
	}
	for _, name := range []string{"config", "db"} {
		if f := c.Flags().Lookup(name); f != nil && f.Changed {
			return cobraUsage{fmt.Errorf("%s: --%s is not used by this command (it reads no configuration or database)\nRun '%s --help' for usage.",
				c.CommandPath(), name, c.CommandPath())}
		}
	}
	return nil
}

// wrapArgs makes cobra's positional-argument errors usage errors.
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		orig := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := orig(cmd, args); err != nil {
				return cobraUsage{fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// checkRunID refuses a run id flag of c below 1 as a usage error: runs are
// numbered from 1, and the flag's 0 default stands for "not given" (omit
// says what the command then does, e.g. "for the latest run"), so a 0 the
// user typed would silently read the default runs.
func checkRunID(c *cobra.Command, flag string, id int64, omit string) error {
	if id < 0 || id == 0 && c.Flags().Changed(flag) {
		name := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ") // "db check", not "check"
		return app.Usage(fmt.Errorf("%s: --%s %d: want a run id (runs are numbered from 1; omit it %s)", name, flag, id, omit))
	}
	return nil
}

// openSession opens the config, corpus (mode) and database for a command:
// one that writes opens it to write (migrating it; sending probes, needKeys,
// may create it), one that only reads opens it read-only and never
// migrates it (app.OpenRead).
func openSession(ctx context.Context, g *globals, writes, needKeys bool, mode app.CorpusMode) (*app.Session, error) {
	return openSessionChecked(ctx, g, writes, needKeys, mode, nil)
}

// openSessionChecked is openSession with check (nil: none) run on the
// loaded configuration before the database is opened: a command's
// arguments that the configuration decides (a retention, a target's name,
// a github block) are refused before a writer opens, and so migrates, the
// database.
func openSessionChecked(ctx context.Context, g *globals, writes, needKeys bool, mode app.CorpusMode, check func(*config.Config) error) (*app.Session, error) {
	if !writes {
		s, err := app.OpenRead(ctx, g.config, g.db, mode)
		if err == nil && check != nil {
			if err = check(s.Config); err != nil {
				s.Close()
				return nil, err
			}
		}
		return s, err
	}
	s, err := app.Prepare(g.config, g.db, needKeys, mode)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(s.Config); err != nil {
			return nil, err
		}
	}
	if err := s.OpenStore(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// groupCommand makes a command that only groups subcommands (db, corpus,
// config) refuse an unknown subcommand as a usage error (exit 2), as the
// root does: cobra would print the group's help and exit 0, so a typo in a
// scheduled "db backpu" would report success and back nothing up. The
// group alone still prints its help.
func groupCommand(c *cobra.Command) {
	c.Args = cobra.ArbitraryArgs
	c.SuggestionsMinimumDistance = 2
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return app.Usage(errors.New(msg))
	}
}
