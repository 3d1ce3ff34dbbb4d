// Package storage is driftprobe's SQLite store (modernc.org/sqlite, pure
// Go): schema and versioned migrations (PRAGMA user_version over embedded
// SQL files), runs, targets, observations, detection state, events, the
// GitHub outbox and the run lease.
//
// The database is opened in WAL mode with a busy timeout, foreign keys and a
// -wal size limit on every pooled connection, and through a single
// connection, so writes are serialized and a transaction is never
// interleaved with another. The run lease alone is read and written
// through a second connection of the same settings (see DB.LeaseSQL), so
// that its renewals never queue behind the store's other statements.
// Observations of a run are written in batched transactions as they arrive;
// a run that is interrupted keeps what it wrote and is marked aborted.
package storage

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// DB is an open driftprobe database.
type DB struct {
	db *sql.DB
	// lease is the run lease's own connection (LeaseSQL) on a store
	// Open returned; nil (db is the lease's too) on a read-only or
	// in-memory one.
	lease *sql.DB
	path  string
	now   func() time.Time
	// unlocked: opened as immutable (OpenReadOnly), the file as it was
	// then; nil otherwise.
	unlocked *fileStamp
	// insertMu guards insertFull, the INSERT of insertRows observations,
	// prepared once for the handle's life (InsertObservations) rather than
	// once per transaction: parsing its 1,024 parameters costs about as
	// much as a tenth of the rows it inserts.
	insertMu   sync.Mutex
	insertFull *sql.Stmt
	// storeTxs and leaseTxs follow the write transactions begun (Tx,
	// txOn) on the store's connection and on the lease's: a transaction
	// on one that waited out the busy timeout says whether the other's
	// held the write lock meanwhile.
	storeTxs, leaseTxs txWatch
	// migrated holds the schema versions Open's migrations took the
	// database from and to (Migrated), equal when it applied none;
	// applied, whether it applied any (through retries on a busy
	// database too).
	migrated [2]int
	applied  bool
}

// Open opens (creating if needed) the database at path and applies pending
// migrations. The store it returns has two connections to the file: its
// one connection (SQL) and the run lease's own (LeaseSQL).
//
// It never migrates a database another process holds a live run lease on
// (an older driftprobe in the middle of a run): it returns an error
// matching ErrLocked, naming the holder, the database left as it was.
func Open(ctx context.Context, p string) (*DB, error) {
	return OpenWith(ctx, p, OpenOptions{})
}

// OpenOptions are what OpenWith takes besides the path.
type OpenOptions struct {
	// Now is the store's clock (as SetClock sets it), which the
	// migrations' lease check reads too; nil: the real clock.
	Now func() time.Time
	// Gone, when set, reports whether a live lease's holder is known to
	// have ended without releasing it (Lease.Gone: a process killed
	// outright on this machine): its lease does not stop the migrations,
	// as it does not stop AcquireLock. It must answer false whenever it
	// cannot be sure.
	Gone func(held Lease) bool
}

// OpenWith is Open with the options o.
func OpenWith(ctx context.Context, p string, o OpenOptions) (*DB, error) {
	// SQLite would open a file this user may not write read-only, leave
	// -wal and -shm files owned by this user beside it, and fail only at
	// the first write: refuse it first.
	if f, err := os.OpenFile(p, os.O_RDWR, 0); err == nil {
		f.Close()
	} else if errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("%s: "+cannotWrite+": %w", p, err)
	}
	if err := refuseForeign(ctx, p); err != nil {
		return nil, err
	}
	createPaged(ctx, p)
	q := url.Values{}
	for _, pr := range []string{"journal_mode(WAL)", busyPragma, "foreign_keys(1)", "synchronous(NORMAL)", walLimitPragma} {
		q.Add("_pragma", pr)
	}
	q.Set("_txlock", "immediate")
	dsn := fileURI(p) + "?" + q.Encode()
	if p == ":memory:" {
		dsn = "file::memory:?" + q.Encode()
	}
	sdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", p, err)
	}
	sdb.SetMaxOpenConns(1)
	sdb.SetConnMaxIdleTime(0)
	d := &DB{db: sdb, path: p, now: func() time.Time { return time.Now().UTC() }}
	if o.Now != nil {
		d.SetClock(o.Now)
	}
	if err := retryBusy(ctx, func() error { return d.migrate(ctx, goneOnce(o.Gone)) }); err != nil {
		sdb.Close()
		return nil, err
	}
	if p == ":memory:" {
		return d, nil // another connection would open another database
	}
	// The lease's connection, opened now: the file it opens is the one
	// the store's connection has (a file moved into place later is not).
	// Its opening may find the database busy as the migrations' did.
	lease, err := sql.Open("sqlite", dsn)
	if err == nil {
		lease.SetMaxOpenConns(1)
		lease.SetConnMaxIdleTime(0)
		if err = retryBusy(ctx, func() error { return lease.PingContext(ctx) }); err != nil {
			lease.Close()
		}
	}
	if err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open database %s: the run lease's connection: %w", p, err)
	}
	d.lease = lease
	return d, nil
}

// uriEscaper escapes what an SQLite URI's path would otherwise read as
// its query ("?"), fragment ("#") or an escape ("%").
var uriEscaper = strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")

// fileURI is the SQLite URI of the file at path p, whatever characters its
// name holds: the file named is the file opened. An absolute path gets an
// empty authority ("file:///…"), so one starting with "//" is no host.
func fileURI(p string) string {
	if strings.HasPrefix(p, "/") {
		return "file://" + uriEscaper.Replace(p)
	}
	return "file:" + uriEscaper.Replace(p)
}

// PageSize is the page size of a database Open creates. SQLite's default,
// 4 KiB, makes a run's inserts cost a write syscall per 4 KiB of the WAL
// and of every checkpoint; 16 KiB pages cut storing an observation by
// about a third (BenchmarkInsertObservations, ~24 to ~15 µs per
// observation). A database created by an older release keeps its 4 KiB
// pages: the page size of a WAL-mode database cannot change in place.
const PageSize = 16384

// createPaged gives a database that does not exist yet, or is an empty
// file, its page size. The page size must be set before the first write
// and before the switch to WAL, which Open's connection string makes on
// connecting, so a short-lived connection of its own does both first. Its
// errors are left for Open's own connection to report; two processes
// creating the same file at once both ask for the same size.
func createPaged(ctx context.Context, p string) {
	if p == ":memory:" {
		return
	}
	if fi, err := os.Stat(p); err == nil && (!fi.Mode().IsRegular() || fi.Size() > 0) {
		return
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return
	}
	sdb, err := sql.Open("sqlite", fileURI(p)+"?"+url.Values{"_pragma": {busyPragma}}.Encode())
	if err != nil {
		return
	}
	defer sdb.Close()
	c, err := sdb.Conn(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d", PageSize)); err != nil {
		return
	}
	c.ExecContext(ctx, "PRAGMA journal_mode = WAL")
}

// OpenReadOnly opens an existing database without changing it: SQLite's
// read-only mode, no journal-mode switch, no migrations, so the schema may
// be older or newer than this binary's; only Check and Backup, which cope
// with every schema version, are meant to run on it. For checks that must
// leave the file byte-for-byte as it was, such as verifying a backup.
//
// Where this process may not write the file or its directory (a copy in a
// read-only directory, a file of mode 0444, a read-only mount), SQLite
// cannot create the -wal and -shm files a WAL-mode database is read
// through. When no -wal file holds commits, the database file alone is
// complete and is read as immutable (no locks, nothing created beside
// it); a non-empty -wal is refused with ErrWALUnreadable. A file this
// process may not write is read as immutable from the start rather than
// through -wal and -shm files SQLite would create owned by this user and
// leave behind (files the database's owner might then be unable to write,
// locking its driftprobe out). An immutable read takes no lock: should
// a writer change the file meanwhile, Check says so instead of reporting
// damage. A rollback journal an interrupted write left beside the file
// is ErrIncomplete.
func OpenReadOnly(ctx context.Context, p string) (*DB, error) {
	// With both the -wal and the -shm file there (a writer's), SQLite
	// reads through them as they are, creating nothing: opened as usual.
	if wal, shm := sidecar(p, "-wal"), sidecar(p, "-shm"); (wal < 0 || shm < 0) && readOnlyFile(p) {
		if err := interrupted(p); err != nil {
			return nil, err
		}
		if wal > 0 {
			return nil, walUnreadable(p, p, nil)
		}
		return openImmutable(ctx, p)
	}
	d, err := openRO(ctx, p, false)
	if err == nil || !(isCantOpen(err) || isReadOnly(err)) {
		return d, err
	}
	// SQLite could not create the -shm (or -wal) file beside the database
	// (SQLITE_READONLY_DIRECTORY, SQLITE_CANTOPEN), or could not roll
	// back a hot journal (SQLITE_READONLY_ROLLBACK).
	if ierr := interrupted(p); ierr != nil {
		return nil, ierr
	}
	if sidecar(p, "-wal") > 0 {
		return nil, walUnreadable(p, filepath.Dir(p), err)
	}
	if _, serr := os.Stat(p); serr != nil {
		return nil, err // no file to read: SQLite's answer stands
	}
	return openImmutable(ctx, p)
}

// ErrIncomplete is returned (wrapped) by OpenReadOnly for a file an
// interrupted write left half-written: a hot rollback journal beside it
// holds what the write changed, and only a writer can roll it back.
var ErrIncomplete = errors.New("the file is incomplete")

// ErrWALUnreadable is returned (wrapped) by OpenReadOnly for a database
// whose -wal file holds commits that this process cannot read without
// write access (SQLite needs the -shm file beside it).
var ErrWALUnreadable = errors.New("holds committed data SQLite cannot read without write access to")

// sidecar returns the size of the file p+suffix, or -1 when there is none.
func sidecar(p, suffix string) int64 {
	st, err := os.Stat(p + suffix)
	if err != nil {
		return -1
	}
	return st.Size()
}

// journalMagic begins a rollback journal once the database file may hold
// part of the write it records (SQLite writes it just before it changes
// the file); a journal whose write finished is deleted, truncated or
// zeroed.
var journalMagic = []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7}

// interrupted returns ErrIncomplete when a rollback journal beside p holds
// a write that never finished, one a read-only open cannot roll back. A
// writer that is alive holds a lock that keeps SQLite from calling its
// journal hot; OpenReadOnly looks only once SQLite refused the file, or
// for a file no process of this user can write.
func interrupted(p string) error {
	f, err := os.Open(p + "-journal")
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, len(journalMagic))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, journalMagic) {
		return nil
	}
	return fmt.Errorf("%s: an interrupted write left %s: %w (an interrupted backup? make a new one; a first run killed while creating the database? run again)", p, p+"-journal", ErrIncomplete)
}

// walUnreadable is the error for a non-empty p-wal that SQLite cannot read
// without write access to where: the database file (which it would need
// to create p-shm beside as this user) or its directory.
func walUnreadable(p, where string, cause error) error {
	err := fmt.Errorf("%s: %s %w %s; copy the three files (%s, -wal, -shm) somewhere writable and read the copy",
		p, p+"-wal", ErrWALUnreadable, where, filepath.Base(p))
	if cause != nil {
		err = fmt.Errorf("%w (SQLite: %v)", err, cause)
	}
	return err
}

// openImmutable opens p read-only as immutable: no locks, nothing created
// beside it. It records the file's size and time so Check can tell
// whether a writer changed it while it was read.
func openImmutable(ctx context.Context, p string) (*DB, error) {
	before, err := stampOf(p)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", p, err)
	}
	d, err := openRO(ctx, p, true)
	if err != nil {
		return nil, err
	}
	d.unlocked = &before
	return d, nil
}

// fileStamp is what tells a file changed: size, modification time, and
// the -wal file beside it (a writer that opens the database creates one).
type fileStamp struct {
	size, wal int64
	mod       time.Time
}

func stampOf(p string) (fileStamp, error) {
	st, err := os.Stat(p)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: st.Size(), mod: st.ModTime(), wal: sidecar(p, "-wal")}, nil
}

// changedSinceOpen reports whether the database was read as immutable and
// its file changed since it was opened: what was read may mix two states.
func (d *DB) changedSinceOpen() bool {
	if d.unlocked == nil {
		return false
	}
	now, err := stampOf(d.path)
	return err != nil || now.size != d.unlocked.size || !now.mod.Equal(d.unlocked.mod) || now.wal != d.unlocked.wal
}

// ErrOlderSchema is returned (wrapped) by OpenReadCurrent for a database an
// older driftprobe wrote: reading it needs its migrations, which write.
var ErrOlderSchema = errors.New("the database schema is older than this driftprobe's")

// OpenReadCurrent is OpenReadOnly for a database of this binary's schema:
// an older one is refused with ErrOlderSchema rather than migrated, so
// looking at a database never upgrades it (which would lock out the
// driftprobe still writing it); a newer one with ErrNewerSchema.
func OpenReadCurrent(ctx context.Context, p string) (*DB, error) {
	d, err := OpenReadOnly(ctx, p)
	if err != nil {
		return nil, err
	}
	cur, err := d.SchemaVersion(ctx)
	switch {
	case err != nil:
		err = openError(p, err)
	case cur < SchemaLatest():
		err = fmt.Errorf("%s: %w (schema %d, this driftprobe's %d)", p, ErrOlderSchema, cur, SchemaLatest())
	case cur > SchemaLatest():
		err = newerSchema(p, cur, "")
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// ErrNotDriftprobe is returned (wrapped) by OpenReadOnly and
// OpenReadCurrent for a file no driftprobe ever migrated (empty, or another
// program's database).
var ErrNotDriftprobe = errors.New("not a driftprobe database")

// SchemaLatest is the schema version this binary migrates to.
func SchemaLatest() int {
	ms, _ := migrations()
	return len(ms)
}

func openRO(ctx context.Context, p string, immutable bool) (*DB, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	for _, pr := range []string{busyPragma, "query_only(1)"} {
		q.Add("_pragma", pr)
	}
	sdb, err := sql.Open("sqlite", fileURI(p)+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", p, err)
	}
	sdb.SetMaxOpenConns(1)
	sdb.SetConnMaxIdleTime(0)
	d := &DB{db: sdb, path: p, now: func() time.Time { return time.Now().UTC() }}
	cur, n, err := versionAndForeign(ctx, sdb)
	switch {
	case err != nil:
		err = openError(p, err)
	case cur == 0 && n > 0:
		// No migration ever ran, yet it holds tables: not driftprobe's.
		err = notOurs(p, n)
	case cur == 0:
		// No schema yet: a creation killed half-way leaves a journal
		// beside it, which is an incomplete database, not a foreign one.
		if err = interrupted(p); err == nil {
			err = fmt.Errorf("%s: %w (no schema; driftprobe run creates one)", p, ErrNotDriftprobe)
		}
	}
	if err != nil {
		sdb.Close()
		return nil, err
	}
	return d, nil
}

// refuseForeign returns ErrNotDriftprobe for an existing, non-empty file
// at p that is not SQLite or holds another program's schema, read without
// changing a byte: Open's switch to WAL would otherwise rewrite the file's
// header before migrate (which checks again under its lock) refuses it.
// Other failures are left to Open to report.
func refuseForeign(ctx context.Context, p string) error {
	if fi, err := os.Stat(p); p == ":memory:" || err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return nil
	}
	sdb, err := sql.Open("sqlite", fileURI(p)+"?"+url.Values{"mode": {"ro"}, "_pragma": {busyPragma}}.Encode())
	if err != nil {
		return nil
	}
	defer sdb.Close()
	cur, n, err := versionAndForeign(ctx, sdb)
	if err != nil {
		if sqliteCode(err) == sqliteNotADB {
			return openError(p, err)
		}
		return nil
	}
	if cur == 0 && n > 0 {
		return notOurs(p, n)
	}
	return nil
}

// versionAndForeign reads the schema version and, when it is 0, the number
// of objects (foreignObjects). A non-zero version is read alone: the
// schema of a newer release may not parse here, and only reading
// sqlite_master parses it. At version 0 the two are read again in one
// statement, so from one snapshot: read separately, the version could be
// read before another process's first migration commits and the objects
// after, making driftprobe's own schema look like another program's.
func versionAndForeign(ctx context.Context, sdb *sql.DB) (version, objects int, err error) {
	if err = sdb.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil || version != 0 {
		return version, 0, err
	}
	err = sdb.QueryRowContext(ctx, `SELECT (SELECT user_version FROM pragma_user_version), (`+foreignObjectsSQL+`)`).Scan(&version, &objects)
	return version, objects, err
}

// foreignObjectsSQL counts a database's tables, indexes, views and
// triggers, SQLite's own aside.
const foreignObjectsSQL = `SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\'`

// foreignObjects counts the tables, indexes, views and triggers of a
// database whose schema version is 0: driftprobe never migrated it, so any
// is another program's.
func foreignObjects(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, foreignObjectsSQL).Scan(&n)
	return n, err
}

// notOurs is the error for a database holding n objects driftprobe did not
// create.
func notOurs(p string, n int) error {
	what := "a table, index or view"
	if n > 1 {
		what = fmt.Sprintf("%d tables, indexes or views", n)
	}
	return fmt.Errorf("%s: %w (it holds %s driftprobe did not create: another program's; choose another --db or database)", p, ErrNotDriftprobe, what)
}

// NotSQLiteError is a file that is not an SQLite database at all: another
// program's file, or one damaged past reading. It is ErrNotDriftprobe, and
// IsCorrupt still sees SQLite's SQLITE_NOTADB in Err (db check calls it
// damage, exit 1).
type NotSQLiteError struct {
	Path string
	Err  error
}

// Error tells the user of any other command that db check says which.
func (e *NotSQLiteError) Error() string {
	return fmt.Sprintf("%s: %v (not an SQLite database: another program's file, or a damaged one — driftprobe db check tells: %v)", e.Path, ErrNotDriftprobe, e.Err)
}

func (e *NotSQLiteError) Unwrap() []error { return []error{ErrNotDriftprobe, e.Err} }

// openError describes a failure to read the database at p: a file that is
// not SQLite at all is ErrNotDriftprobe, a path SQLite cannot open says
// so, anything else is wrapped as it is; each names p.
func openError(p string, err error) error {
	switch sqliteCode(err) {
	case sqliteNotADB:
		return &NotSQLiteError{Path: p, Err: err}
	case sqliteCantOpen:
		return fmt.Errorf("%s: cannot open the database (does its directory exist, is it a file, may this user write there?): %w", p, err)
	case sqliteReadOnly:
		var se *sqlite.Error
		if errors.As(err, &se) && se.Code() != sqliteReadOnlyRollback {
			return fmt.Errorf("%s: %s: %w", p, cannotWriteAt(p), err)
		}
	}
	return fmt.Errorf("%s: read schema version: %w", p, err)
}

// cannotWrite explains a database this user may not write.
const cannotWrite = "this user may not write the database or its directory (run, serve, compare --run, outbox --send, db migrate and db prune write to it; commands that only read do not need to)"

// cannotWriteAt is cannotWrite for the database at p, naming its -wal and
// -shm files when those are what this user may not write (another user's
// process — a root run, an sqlite3 session — left them beside a database
// this user owns): their ownership is what to fix, not the database's.
func cannotWriteAt(p string) string {
	var side []string
	for _, f := range []string{p + "-wal", p + "-shm"} {
		if readOnlyFile(f) {
			side = append(side, f)
		}
	}
	if len(side) == 0 || readOnlyFile(p) {
		return cannotWrite
	}
	return fmt.Sprintf("this user may not write %s, beside the database (left by another user's process, such as a run as root, or an sqlite3 session: give them to the user driftprobe runs as, with chown; never delete them: the -wal can hold committed runs)", strings.Join(side, " and "))
}

// sqliteReadOnlyRollback is SQLITE_READONLY_ROLLBACK: a hot journal this
// connection may not roll back (an interrupted write; see ErrIncomplete).
const sqliteReadOnlyRollback = sqliteReadOnly | 3<<8

// isCantOpen and isReadOnly report SQLite's SQLITE_CANTOPEN and
// SQLITE_READONLY.
func isCantOpen(err error) bool { return sqliteCode(err) == sqliteCantOpen }
func isReadOnly(err error) bool { return sqliteCode(err) == sqliteReadOnly }

// SQLite primary result codes driftprobe tells apart.
const (
	sqliteBusy     = 5  // SQLITE_BUSY
	sqliteReadOnly = 8  // SQLITE_READONLY
	sqliteCorrupt  = 11 // SQLITE_CORRUPT
	sqliteCantOpen = 14 // SQLITE_CANTOPEN
	sqliteNotADB   = 26 // SQLITE_NOTADB
)

// sqliteCode returns err's SQLite primary result code, or -1.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return -1
}

// openAttempts bounds Open's retries on SQLITE_BUSY (about 10 s in all).
const openAttempts = 45

// retryBusy calls try until it returns anything but SQLITE_BUSY,
// openAttempts times at most, a little longer apart each time: Open's
// first statements on each of its connections (the migrations on the
// store's, the opening of the run lease's). A database another process is
// creating or opening at this very moment can answer SQLITE_BUSY before
// the busy timeout applies (switching a new file to WAL takes an
// exclusive lock, as does recovering a WAL a crash left). It returns
// try's last error, joined with ctx's when ctx ended the wait.
func retryBusy(ctx context.Context, try func() error) error {
	for attempt := 1; ; attempt++ {
		err := try()
		if err == nil || !isBusy(err) || attempt == openAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(time.Duration(attempt) * 10 * time.Millisecond):
		}
	}
}

// isBusy reports whether err is SQLite's "database is locked".
func isBusy(err error) bool { return sqliteCode(err) == sqliteBusy }

// BusyTimeout is how long a statement waits for another connection's
// lock (the busy_timeout pragma every connection sets): a run lease's
// renewal may wait as long, and fail (config.MinLockTTL allows for it).
const BusyTimeout = 10 * time.Second

// busyPragma sets BusyTimeout on a connection (a _pragma value).
var busyPragma = fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds())

// walSizeLimit is the size a writer's -wal file is cut back to when SQLite
// restarts the log after a checkpoint (journal_size_limit). Without it the
// file keeps its high-water mark while the writer stays open: a prune
// written beside a long reader (db backup, db check), which no checkpoint
// can pass, leaves a -wal as large as all it wrote (921 MB measured) on
// disk for as long as serve runs. 64 MiB is four times what the automatic
// checkpoint lets the log reach between checkpoints (1,000 pages of 16
// KiB), so an ordinary run's log is reused in place, never cut and grown
// again.
const walSizeLimit = 64 << 20

// walLimitPragma sets walSizeLimit on a writer's connection.
var walLimitPragma = fmt.Sprintf("journal_size_limit(%d)", walSizeLimit)

// SetClock replaces the clock used for timestamps (tests).
func (d *DB) SetClock(now func() time.Time) { d.now = func() time.Time { return now().UTC() } }

// Now returns the store's current time.
func (d *DB) Now() time.Time { return d.now() }

// Close closes the database, the lease's connection included.
func (d *DB) Close() error {
	d.insertMu.Lock()
	if d.insertFull != nil {
		d.insertFull.Close()
		d.insertFull = nil
	}
	d.insertMu.Unlock()
	var err error
	if d.lease != nil {
		err = d.lease.Close()
	}
	return errors.Join(d.db.Close(), err)
}

// SQL exposes the underlying handle for packages that own their own tables
// (detection, outbox). They must keep transactions short.
func (d *DB) SQL() *sql.DB { return d.db }

// LeaseSQL is the handle the run lease is read and written through
// (AcquireLock, RenewLock, ReleaseLock, LockHolder). On a store Open
// returned it is a connection of its own on the same file, with the same
// settings (WAL, busy timeout, foreign keys): a lease operation waits for
// SQLite's write lock, through the busy timeout at most, but never for
// the store's one connection, which a run's writer or serve's delivery
// worker may hold meanwhile, each statement waiting as long for another
// process's write lock; a renewal queued behind several of them would
// land after the lease expired. On a read-only or in-memory store it is
// SQL(). Nothing else is meant to use it (tests hold it to stall lease
// operations). A lease operation made inside a write transaction on
// SQL() waits for that transaction's own write lock, and fails after the
// busy timeout, saying it was this process's own.
func (d *DB) LeaseSQL() *sql.DB {
	if d.lease == nil {
		return d.db
	}
	return d.lease
}

// Path returns the file path the database was opened from.
func (d *DB) Path() string { return d.path }

// SchemaVersion returns the applied migration version.
func (d *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := d.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationsFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		n := e.Name()
		num, _, ok := strings.Cut(n, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", n)
		}
		b, err := migrationsFS.ReadFile(path.Join("migrations", n))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{v, n, string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: versions must be consecutive from 1", m.name)
		}
	}
	return out, nil
}

// createsRunLock matches the statement creating the run lease's table.
var createsRunLock = regexp.MustCompile(`(?i)\bCREATE\s+TABLE\s+(IF\s+NOT\s+EXISTS\s+)?"?run_lock\b`)

// leaseSchema is the schema version from which a database has the run
// lease's table (run_lock): the version of the migration creating it
// (0 if none does).
func leaseSchema(ms []migration) int {
	for _, m := range ms {
		if createsRunLock.MatchString(m.sql) {
			return m.version
		}
	}
	return 0
}

// ErrNewerSchema is returned when the database was written by a newer
// driftprobe.
var ErrNewerSchema = errors.New("database schema is newer than this driftprobe")

// newerSchema is the error for the database at path whose schema, newer
// than SchemaLatest, this driftprobe does not know; what, when not empty,
// follows it (what happened, what to do).
func newerSchema(path string, schema int, what string) error {
	err := fmt.Errorf("%s: %w (schema %d, this binary knows %d)", path, ErrNewerSchema, schema, SchemaLatest())
	if what != "" {
		err = fmt.Errorf("%w%s", err, what)
	}
	return err
}

// migrate applies the pending migrations, all in one transaction: an
// upgrade (or a new database's schema) commits whole or not at all. The
// schema version is read inside that (immediate, write-locked)
// transaction, so processes opening the same database at once — a daemon
// and a CLI command after an upgrade — apply each migration exactly once
// instead of racing to apply it twice.
//
// It records what it did for Migrated: the versions it migrated the
// database from and to, or that it applied nothing (the database was
// current, or another process migrated it first).
func (d *DB) migrate(ctx context.Context, gone func(Lease) bool) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	for {
		cur, err := d.SchemaVersion(ctx)
		if err != nil {
			return openError(d.path, err)
		}
		if cur > len(ms) {
			return newerSchema(d.path, cur, "")
		}
		if cur == len(ms) {
			if !d.applied {
				d.migrated[0] = cur
			}
			d.migrated[1] = cur
			return nil
		}
		// A live lease refuses at once, read outside any write
		// transaction (in WAL mode a read never waits for a writer), as
		// AcquireLock reads it: its holder may hold the write lock for
		// longer than the busy timeout (db prune --vacuum), and waiting
		// for that lock through every retry would end in a busy error,
		// not in the holder's name. Read again under the lock below.
		if err := d.leaseFree(ctx, d.db, cur, ms, gone); err != nil {
			return err
		}
		from := -1
		err = d.Tx(ctx, func(tx *sql.Tx) error {
			// Under the write lock: another process may have migrated
			// since the read above.
			if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err != nil {
				return err
			}
			if cur >= len(ms) {
				return nil
			}
			if cur == 0 {
				// Only into a new or empty file: never add driftprobe's
				// tables to another program's database.
				if n, err := foreignObjects(ctx, tx); err != nil {
					return openError(d.path, err)
				} else if n > 0 {
					return notOurs(d.path, n)
				}
			}
			// Never under another process's run: an older driftprobe
			// holding a live lease is writing this schema (the lease's
			// schema check stops only its next run, not this one).
			if err := d.leaseFree(ctx, tx, cur, ms, gone); err != nil {
				return err
			}
			// Every pending migration in this one transaction: an upgrade
			// (or a new database's schema) commits whole or not at all.
			from = cur
			for _, m := range ms[cur:] {
				if _, err := tx.ExecContext(ctx, m.sql); err != nil {
					return fmt.Errorf("migration %s: %w", m.name, err)
				}
				if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
					return fmt.Errorf("migration %s: %w", m.name, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if from >= 0 && !d.applied {
			d.migrated[0], d.applied = from, true // committed
		}
	}
}

// leaseFree returns nil unless the database, at schema cur (one that has
// the run lease's table: leaseSchema), has a live lease, unexpired by the
// store's clock and whose holder gone does not say has ended, read
// through q (the store's connection before migrate's write transaction,
// then that transaction): then an error matching
// ErrLocked (wrapping its *LockedError) saying the database was not
// migrated, who holds it, and what to do. Open holds no lease of its
// own: any lease is another process's.
func (d *DB) leaseFree(ctx context.Context, q querier, cur int, ms []migration, gone func(Lease) bool) error {
	if since := leaseSchema(ms); since == 0 || cur < since {
		return nil
	}
	// Open holds no lease (the empty holder): any live one is another
	// process's, as AcquireLock judges it (none, expired or gone is free).
	_, err := d.liveLease(ctx, q, Lease{}, gone)
	var locked *LockedError
	if !errors.As(err, &locked) {
		if err != nil {
			return fmt.Errorf("%s: before migrating: %w", d.path, err)
		}
		return nil
	}
	return fmt.Errorf("%s: the database was NOT migrated (schema %d, this driftprobe's is %d) and is left as it was: %w; "+
		"migrating it would change the schema under that run: run this command again once that run has finished, or stop that process",
		d.path, cur, len(ms), locked)
}

// Migrated reports the schema versions the migrations Open applied took
// the database from and to. When it applied none, both are the version it
// found: the database was this driftprobe's schema already, or another
// process opening it at the same time migrated it first (Open waited for
// that process's write lock, then found the migrations applied). Zero for
// a store Open did not return.
func (d *DB) Migrated() (from, to int) { return d.migrated[0], d.migrated[1] }

// Tx runs fn in one transaction, committing when it returns nil.
func (d *DB) Tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return d.txOn(ctx, d.db, fn)
}

// txOn is Tx on the handle sdb (the store's, or the lease's).
func (d *DB) txOn(ctx context.Context, sdb *sql.DB, fn func(tx *sql.Tx) error) error {
	mine, other, otherName := d.txWatches(sdb)
	before := other.seen()
	tx, err := sdb.BeginTx(ctx, nil)
	if err != nil {
		if isBusy(err) {
			// The database's write lock was held for longer than the
			// busy timeout: say by whom, as far as this process knows,
			// and where.
			return fmt.Errorf("begin: %s: %s: %w", d.path, busyHolders(before, other.seen(), otherName), err)
		}
		if isReadOnly(err) {
			// Files beside the database (its -wal, -shm) this user may
			// not write, or a mount that became read-only.
			return fmt.Errorf("begin: %s: %s: %w", d.path, cannotWriteAt(d.path), err)
		}
		return fmt.Errorf("begin: %w", err)
	}
	// Begun: on a writer's store (immediate transactions) it holds the
	// write lock until it commits or rolls back.
	mine.begin()
	defer mine.end()
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// txWatch follows the write transactions txOn begins on one of a store's
// handles: whether one is open, and how many have begun. Statements run
// outside a transaction (through SQL() directly) are not followed.
type txWatch struct {
	mu    sync.Mutex
	open  int
	begun uint64
}

// txSeen is what a txWatch saw at one moment.
type txSeen struct {
	open  bool
	begun uint64
}

// seen returns what w saw so far (nothing for a nil w).
func (w *txWatch) seen() txSeen {
	if w == nil {
		return txSeen{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return txSeen{open: w.open > 0, begun: w.begun}
}

// begin records a transaction begun; end, once it committed or rolled back.
func (w *txWatch) begin() {
	w.mu.Lock()
	w.open++
	w.begun++
	w.mu.Unlock()
}

func (w *txWatch) end() {
	w.mu.Lock()
	w.open--
	w.mu.Unlock()
}

// txWatches returns the txWatch of the handle sdb, and that of this
// store's other handle with its name (nil when the store has only one:
// read-only or in-memory).
func (d *DB) txWatches(sdb *sql.DB) (mine, other *txWatch, otherName string) {
	switch {
	case d.lease == nil:
		return &d.storeTxs, nil, ""
	case sdb == d.lease:
		return &d.leaseTxs, &d.storeTxs, "its store connection"
	default:
		return &d.storeTxs, &d.leaseTxs, "its run lease's connection"
	}
}

// busyHolders says who held the database's write lock while a
// transaction waited out the busy timeout to begin on one of this store's
// handles, from what its other handle (named where) was seen doing when
// the wait began (before) and when it failed (after). A transaction
// begins holding the lock and is seen open only after, and is seen ended
// only once it let the lock go: one seen open before and after, and none
// begun in between, held it all the while. None seen open at either end,
// and none begun in between, held it at no time: another process did (a
// statement this process ran outside a transaction holds the lock only
// while it runs; its one long one, VACUUM, runs under the run lease this
// process then holds, and never beside a lease acquisition of its own).
func busyHolders(before, after txSeen, where string) string {
	switch {
	case before.open && after.open && before.begun == after.begun:
		return fmt.Sprintf("this process's own write transaction, on %s, has held the database for more than %s (the busy timeout), as long as this one waited", where, BusyTimeout)
	case before.open || after.open || before.begun != after.begun:
		n := after.begun - before.begun
		if before.open {
			n++
		}
		return fmt.Sprintf("write transactions have held the database for more than %s (the busy timeout): this process's own, on %s (%d while this one waited), perhaps with another process's (a driftprobe command or a program writing it directly)", BusyTimeout, where, n)
	}
	return fmt.Sprintf("another process has held a write transaction on the database for more than %s (the busy timeout; a driftprobe command or a program writing it directly)", BusyTimeout)
}

const timeFmt = time.RFC3339Nano

func ts(t time.Time) string { return t.UTC().Format(timeFmt) }

// ParseTime reads a stored timestamp.
func ParseTime(s string) time.Time {
	t, _ := time.Parse(timeFmt, s)
	return t
}
