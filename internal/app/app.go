// Package app wires configuration, corpus, store, probers and runner into
// the operations the CLI and the daemon share.
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/internal/yamlx"
	"github.com/driftprobe/driftprobe/probes"
	_ "github.com/driftprobe/driftprobe/probes/all" // every provider
	"github.com/driftprobe/driftprobe/runner"
	"github.com/driftprobe/driftprobe/storage"
)

// Version is the build version, set with -ldflags "-X ...app.Version=v1.2.3".
var Version = "dev"

// UsageError marks an error caused by the user's input (exit code 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usage wraps err as a usage error.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{err}
}

// IsUsage reports whether err is a usage or input error.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u) || yamlx.IsInputError(err) || errors.Is(err, corpus.ErrChangedUnderVersion)
}

// LoadConfig loads path, or the built-in default when path is "". dbOverride
// replaces the database path when non-empty.
func LoadConfig(path, dbOverride string, needKeys bool) (*config.Config, error) {
	var c *config.Config
	if path == "" {
		c = config.Default()
		if err := c.Validate(needKeys); err != nil {
			return nil, Usage(err)
		}
	} else {
		var err error
		if c, err = config.LoadWithDatabase(path, dbOverride, needKeys); err != nil {
			return nil, Usage(err)
		}
	}
	if dbOverride != "" {
		c.Database = dbOverride
	}
	return c, nil
}

// LoadCorpus loads dir, else the config's corpus, else the embedded default,
// and checks (and, when lock is true, extends) its lock.
func LoadCorpus(c *config.Config, dir string, lock bool) (*corpus.Corpus, error) {
	where := "" // FILE:LINE: when the directory comes from the config
	if dir == "" && c != nil {
		dir, where = c.Corpus, c.Where("corpus")
	}
	if dir == "" {
		cp, err := corpus.Default()
		return cp, Usage(err)
	}
	switch st, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		rel := ""
		if !filepath.IsAbs(dir) {
			wd, _ := os.Getwd()
			rel = fmt.Sprintf(" (a relative path is read from the working directory, %s)", wd)
		}
		return nil, Usage(fmt.Errorf("%scorpus: %s does not exist%s", where, dir, rel))
	case err != nil:
		return nil, Usage(fmt.Errorf("%scorpus: %w", where, err))
	case !st.IsDir():
		return nil, Usage(fmt.Errorf("%scorpus: %s is not a directory (a corpus is a directory with corpus.yaml and corpus.lock)", where, dir))
	}
	cp, err := corpus.Load(dir)
	if err != nil {
		if where != "" && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
			// corpus.yaml cannot be read: the config's corpus field is
			// what is wrong, so name it (FILE:LINE: corpus:), as above.
			err = fmt.Errorf("%scorpus: %w", where, err)
		}
		return nil, Usage(err)
	}
	if _, err := corpus.CheckLock(cp, lock); err != nil {
		return nil, Usage(err)
	}
	return cp, nil
}

// BuildTargets builds a prober for every enabled target, to send. The
// returned closer releases them (stops in-process simulators). Every
// credential a target sends with must be present, or it fails with a usage
// error naming the variable: the target's api_key_env variable when it
// names one, else what a prober reading its own credentials reports
// missing (credentialChecker: Bedrock's AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY), so a run fails before it starts rather than at
// its first attempt.
func BuildTargets(c *config.Config) ([]*runner.Target, func(), error) {
	return buildTargets(c, true)
}

// BuildRenderTargets builds probers that are only asked to render (`plan`)
// or to classify stored answers (`replay`), and never requires a
// credential: a key whose environment variable is unset is empty, and a
// prober reading credentials of its own (Bedrock's SigV4 variables) is
// built without them, since rendering and classifying never use one (the
// adapters' conformance tests check that no key is ever rendered). They
// must not send: such a prober's Authorize fails.
func BuildRenderTargets(c *config.Config) ([]*runner.Target, func(), error) {
	return buildTargets(c, false)
}

// credentialChecker is implemented by a prober that reads credentials of
// its own when it is built, rather than taking the key of probes.Target
// (bedrock: SigV4 keys from the environment). Its factory does not fail
// when they are missing, since a prober that only renders or classifies
// needs none; CredentialsError names what is missing (nil when the prober
// can send), and its Authorize fails with the same error.
type credentialChecker interface {
	CredentialsError() error
}

// secretHolder is implemented by a prober that sends credentials of its
// own besides the target's key (bedrock: the SigV4 secret key and session
// token): the standard library's logger redacts them too (stdLog).
type secretHolder interface {
	Secrets() []string
}

func buildTargets(c *config.Config, needKeys bool) ([]*runner.Target, func(), error) {
	var out []*runner.Target
	closeAll := func() {
		for _, t := range out {
			if cl, ok := t.Prober.(probes.Closer); ok {
				_ = cl.Close()
			}
		}
	}
	for _, tc := range c.Enabled() {
		key, err := tc.Key()
		if err != nil && !needKeys {
			key, err = "", nil
		}
		if err != nil {
			closeAll()
			return nil, nil, Usage(err)
		}
		p, err := probes.New(tc.ProbeTarget(key))
		if err == nil && needKeys {
			if cc, ok := p.(credentialChecker); ok {
				if err = cc.CredentialsError(); err != nil {
					if cl, ok := p.(probes.Closer); ok {
						_ = cl.Close()
					}
				}
			}
		}
		if err != nil {
			closeAll()
			return nil, nil, Usage(fmt.Errorf("target %s: %w", tc.Name, err))
		}
		rememberSecret(key)
		if sh, ok := p.(secretHolder); ok {
			for _, s := range sh.Secrets() {
				rememberSecret(s)
			}
		}
		out = append(out, &runner.Target{Config: tc, Prober: p, Secret: key})
	}
	return out, closeAll, nil
}

// OpenStore opens (creating if needed) the configured database. A file
// that is not driftprobe's is a usage error (exit 2).
func OpenStore(ctx context.Context, c *config.Config) (*storage.DB, error) {
	if err := CheckDatabasePath(c); err != nil {
		return nil, err
	}
	// A run lease whose holder is known to have ended (killed on this
	// machine) does not stop the migrations, as it does not stop the
	// lease's takeover; any other live lease does (storage.Open).
	st, err := storage.OpenWith(ctx, c.Database, storage.OpenOptions{Gone: leaseHolderGone})
	if errors.Is(err, storage.ErrNotDriftprobe) {
		return nil, Usage(err)
	}
	return st, err
}

// Logger returns the process logger (text on stderr).
func Logger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// Hostname returns the host name for run records.
func Hostname() string {
	h, _ := os.Hostname()
	return h
}

// CorpusMode says what Open does with the corpus.
type CorpusMode int

const (
	NoCorpus    CorpusMode = iota // commands that only read the database
	CheckCorpus                   // load and check against its lock (a run's first use of a version is locked by RunOnce)
)

// Session is a loaded configuration, its corpus and the open database.
type Session struct {
	Config *config.Config
	Corpus *corpus.Corpus
	Store  *storage.DB
}

// Open loads the configuration (path "" for the built-in one), optionally
// the corpus, and opens the database. Close releases it. Only commands
// that send probes (needKeys) create a database: for the others a missing
// file is a usage error (a mistyped --db must not read as an empty,
// healthy database).
func Open(ctx context.Context, path, dbOverride string, needKeys bool, mode CorpusMode) (*Session, error) {
	s, err := Prepare(path, dbOverride, needKeys, mode)
	if err != nil {
		return nil, err
	}
	if err := s.OpenStore(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Prepare is Open without opening the database (Store is nil): a command
// that writes checks its own arguments against the configuration in
// between, so that one it refuses leaves the database as it was, never
// migrated (an older driftprobe still writing it would be locked out).
func Prepare(path, dbOverride string, needKeys bool, mode CorpusMode) (*Session, error) {
	return load(path, dbOverride, needKeys, !needKeys, mode)
}

// OpenStore opens a prepared session's database for writing, migrating
// it (OpenStore).
func (s *Session) OpenStore(ctx context.Context) error {
	st, err := OpenStore(ctx, s.Config)
	if err != nil {
		return err
	}
	s.Store = st
	return nil
}

// load is the part of opening before the database: the configuration,
// whether the database file must exist, and the corpus.
func load(path, dbOverride string, needKeys, mustExist bool, mode CorpusMode) (*Session, error) {
	cfg, err := LoadConfig(path, dbOverride, needKeys)
	if err != nil {
		return nil, err
	}
	if mustExist {
		if err := requireDatabase(cfg); err != nil {
			return nil, err
		}
	}
	s := &Session{Config: cfg}
	if mode != NoCorpus {
		// Nothing is locked here: RunOnce locks a new version once the
		// database agrees with its bytes.
		if s.Corpus, err = LoadCorpus(cfg, "", false); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// requireDatabase refuses a database file that does not exist, a
// directory in its place, and an empty file.
func requireDatabase(cfg *config.Config) error {
	if cfg.Database == ":memory:" {
		return nil
	}
	fi, err := os.Stat(cfg.Database)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		rel := ""
		if !filepath.IsAbs(cfg.Database) {
			wd, _ := os.Getwd()
			rel = fmt.Sprintf("; a relative path is read from the working directory, %s", wd)
		}
		return Usage(fmt.Errorf("database %s does not exist (driftprobe run creates it; check --db or the config's database%s)", cfg.Database, rel))
	case err == nil && fi.IsDir():
		return dirAsDatabase(cfg.Database)
	case err == nil && fi.Size() == 0 && !exists(cfg.Database+"-journal") && !exists(cfg.Database+"-wal"):
		// An empty file is no database: maintenance that writes (db prune,
		// outbox --send) would otherwise create the schema in it. (With a
		// journal beside it, a creation was interrupted: db check says so.)
		return Usage(fmt.Errorf("database %s is an empty file, not a driftprobe database (driftprobe run creates one; check --db or the config's database)", cfg.Database))
	}
	return nil
}

// CheckDatabasePath refuses what OpenStore refuses before opening: a
// directory where the database file belongs (a usage error, exit 2), be it
// the config's database or --db's.
func CheckDatabasePath(c *config.Config) error {
	if fi, err := os.Stat(c.Database); err == nil && fi.IsDir() {
		return dirAsDatabase(c.Database)
	}
	return nil
}

// dirAsDatabase is the usage error for a directory given as the database.
func dirAsDatabase(p string) error {
	return Usage(fmt.Errorf("database %s is a directory, not a database file (check --db or the config's database)", p))
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// OpenRead is Open for commands that only read: the database must exist
// and be of this binary's schema, and is opened read-only
// (storage.OpenReadCurrent), so looking at a database never migrates it (a
// migrated database locks out the older driftprobe still writing it). An
// older schema is a usage error saying how to upgrade.
func OpenRead(ctx context.Context, path, dbOverride string, mode CorpusMode) (*Session, error) {
	s, err := load(path, dbOverride, false, true, mode)
	if err != nil {
		return nil, err
	}
	if s.Store, err = storage.OpenReadCurrent(ctx, s.Config.Database); err != nil {
		if errors.Is(err, storage.ErrNotDriftprobe) {
			return nil, Usage(err)
		}
		if errors.Is(err, storage.ErrOlderSchema) {
			return nil, Usage(fmt.Errorf("%w: back it up (driftprobe db backup FILE), then upgrade it with driftprobe db migrate or the next run; driftprobes older than this one cannot open it afterwards", err))
		}
		return nil, err
	}
	return s, nil
}

// OpenReadOnly loads the configuration and opens its existing database
// without changing it (storage.OpenReadOnly: no migrations, no journal
// switch), for `db check`. No corpus is loaded.
func OpenReadOnly(ctx context.Context, path, dbOverride string) (*Session, error) {
	s, err := load(path, dbOverride, false, true, NoCorpus)
	if err != nil {
		return nil, err
	}
	if s.Store, err = storage.OpenReadOnly(ctx, s.Config.Database); err != nil {
		if errors.Is(err, storage.ErrNotDriftprobe) {
			return nil, Usage(err)
		}
		return nil, err
	}
	return s, nil
}

// Close closes the database (nothing for a session Prepare made and OpenStore never opened).
func (s *Session) Close() error {
	if s.Store == nil { // prepared, never opened
		return nil
	}
	return s.Store.Close()
}
