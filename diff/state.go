package diff

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/probes"
)

// State is the detection state of one probe on one target, as exposed to
// readers (metrics, tests).
type State struct {
	ProbeID          string
	RequestSHA256    string
	Baseline         string // verdict key; "" until established
	LastVerdict      string
	Nondeterministic bool
	Changes          int
	Reverts          int
}

// The states of a target are stored as one blob (format 2): a format
// byte, a string table (uvarint count, then uvarint length + bytes each)
// holding the verdict keys, model ids and score strings that repeat across
// probes, a uvarint probe count, then per probe its id (inline), its
// request fingerprint (32 raw bytes, or inline when not hex), and its other
// fields in a fixed order: strings as uvarint indexes into the table,
// integers as varints. Interning keeps a 10,000-probe target near 0.5 MB.
// Format 3 adds each probe's last revert run and previous candidate at
// the end (format 2 blobs read with 0 and "" there). Format 4 adds, after
// those, the answer carrying exactly the baseline's scores and its model
// (format 2 and 3 blobs read with 0 and "": a drift then cites the
// baseline's answer, as before). Format 5 is format 4 under a new rule:
// while a probe's first baseline forms, a new verdict replacing the
// candidate is no longer a revert (only a return to the one it replaced
// is). Reverts a format 4 (or older) blob counted while the baseline
// formed, or before the baseline it holds was confirmed, may be such
// replacements: they are read as none — all but the latest, when that one
// came after the baseline held now was confirmed (upgradeReverts) — so a
// provider change seen while a baseline formed before the upgrade does not
// push a probe toward nondeterminism after it. A noisy probe may then need
// more reverts to be marked (up to nondeterministic_flips − 1).
//
// A probe's since-run field is where its flip rate counts from (see
// state.sinceRun): from 2026-12-02 it is advanced past every run that did
// not compare the probe, in every format (no new one: the field and its
// encoding are unchanged, and an older reader reads it as before).
//
// Probes absent from the corpus (removed by a version bump) keep their
// state, so that a probe restored with the same request bytes is compared
// with its old baseline. They follow the probe list, in an optional
// trailing section: a uvarint count, then per probe the same fields as
// above followed by a varint: the run it was first missing in. The section
// is absent when no probe is; a decoder that stops after the probe list
// (driftprobe before it kept absent probes) reads the blob as before and
// simply drops them, as it always did (the section needed no new format).
const stateFormat = 5

// upgradeReverts applies format 5's revert rule to a state read from an
// older blob (see stateFormat): only its latest revert is dated, so only
// that one, when it came after the baseline held now was confirmed, is
// kept; every other may have been counted while a baseline formed.
func upgradeReverts(st *state) {
	switch {
	case st.reverts == 0:
	case st.baseline == "" || st.lastRevertRun <= st.baselineRun:
		st.reverts, st.lastRevertRun = 0, 0
	default:
		st.reverts = 1
	}
}

func encodeStates(states map[string]*state) []byte {
	var ids, gone []string
	for id, st := range states {
		if st.absentSince > 0 {
			gone = append(gone, id)
		} else {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	sort.Strings(gone)
	index := map[string]uint64{}
	var table []string
	intern := func(s string) uint64 {
		if i, ok := index[s]; ok {
			return i
		}
		i := uint64(len(table))
		index[s] = i
		table = append(table, s)
		return i
	}
	body := make([]byte, 0, len(ids)*64)
	str := func(s string) { body = binary.AppendUvarint(body, uint64(len(s))); body = append(body, s...) }
	ref := func(s string) { body = binary.AppendUvarint(body, intern(s)) }
	num := func(n int64) { body = binary.AppendVarint(body, n) }
	probe := func(st *state) {
		str(st.probeID)
		if raw, err := hex.DecodeString(st.sha); err == nil && len(raw) == 32 {
			body = append(body, 1)
			body = append(body, raw...)
		} else {
			body = append(body, 0)
			str(st.sha)
		}
		num(st.sinceRun)
		ref(st.baseline)
		num(st.baselineRun)
		ref(st.baselineModel)
		num(st.baselineObs)
		ref(st.baselineScores)
		ref(st.candidate)
		num(st.candidateRun)
		num(int64(st.candidateRuns))
		ref(st.candidateModel)
		num(st.candidateObs)
		ref(st.driftScores)
		num(int64(st.driftRuns))
		num(st.driftRun)
		ref(st.lastVerdict)
		num(int64(st.changes))
		num(int64(st.reverts))
		nd := int64(0)
		if st.nondeterministic {
			nd = 1
		}
		num(nd)
		num(st.lastRevertRun)
		ref(st.prevCandidate)
		num(st.scoresObs)
		ref(st.scoresModel)
	}
	body = binary.AppendUvarint(body, uint64(len(ids)))
	for _, id := range ids {
		probe(states[id])
	}
	if len(gone) > 0 {
		body = binary.AppendUvarint(body, uint64(len(gone)))
		for _, id := range gone {
			probe(states[id])
			num(states[id].absentSince)
		}
	}
	size := 16 + len(body)
	for _, t := range table {
		size += len(t) + 4
	}
	b := make([]byte, 0, size)
	b = append(b, stateFormat)
	b = binary.AppendUvarint(b, uint64(len(table)))
	for _, t := range table {
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
	}
	return append(b, body...)
}

var errCorruptState = errors.New("corrupt probe state")

func decodeStates(b []byte) (map[string]*state, error) { return decodeStatesAs(b, true) }

// decodeStatesAs decodes a blob; with absent false it reads it as
// driftprobe did before it kept absent probes: the probe list, anything
// after it ignored (tests pin that such a reader still reads every
// blob written now).
func decodeStatesAs(b []byte, absent bool) (map[string]*state, error) {
	out, err := decodeStatesVariant(b, absent, false)
	if absent && len(b) > 0 && b[0] == 4 && (err != nil || !validIDs(out)) {
		// Format 4 as main wrote it for an hour (b33ff0d to d50c1e8, before
		// 778db11 took the field out): each probe also carried the model a
		// pending score drift began under, a reference that was never read.
		// Such a blob almost always fails the reading above (the probes
		// after the first are misaligned, and its end is not where the
		// absent probes begin); where the misalignment happens to realign,
		// it reads probe ids no corpus can hold (the extra reference taken
		// for an id's length, that length byte for part of the id). It is
		// read whole, byte for byte, with valid ids, or not at all here.
		if legacy, lerr := decodeStatesVariant(b, absent, true); lerr == nil && validIDs(legacy) {
			return legacy, nil
		}
	}
	return out, err
}

// validIDs reports whether every state's probe id is one a corpus may
// hold (corpus.ValidID).
func validIDs(states map[string]*state) bool {
	for id := range states {
		if !corpus.ValidID(id) {
			return false
		}
	}
	return true
}

// decodeStatesVariant decodes a blob as decodeStatesAs describes; with
// driftModel, a format 4 blob is read as b33ff0d wrote it (see there).
func decodeStatesVariant(b []byte, absent, driftModel bool) (map[string]*state, error) {
	if len(b) == 0 {
		// encodeStates always writes the format byte, even for no probes,
		// and a target without a state has no row at all: an empty (or
		// NULL) blob is damage, never "no state", which would restart
		// every baseline silently, with no input change recorded.
		return nil, fmt.Errorf("%w: empty", errCorruptState)
	}
	format := b[0]
	if format < 2 || format > stateFormat {
		return nil, fmt.Errorf("%w: format %d", errCorruptState, b[0])
	}
	b = b[1:]
	var err error
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			err = errCorruptState
			return 0
		}
		b = b[n:]
		return v
	}
	str := func() string {
		l := uv()
		if err != nil || l > uint64(len(b)) {
			err = errCorruptState
			return ""
		}
		s := string(b[:l])
		b = b[l:]
		return s
	}
	num := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			err = errCorruptState
			return 0
		}
		b = b[n:]
		return v
	}
	nt := uv()
	if err != nil || nt > uint64(len(b)) {
		return nil, errCorruptState
	}
	table := make([]string, nt)
	for i := range table {
		table[i] = str()
	}
	ref := func() string {
		i := uv()
		if err != nil || i >= uint64(len(table)) {
			err = errCorruptState
			return ""
		}
		return table[i]
	}
	count := uv()
	if err != nil || count > uint64(len(b)) {
		return nil, errCorruptState
	}
	out := make(map[string]*state, count)
	probe := func() *state {
		st := &state{}
		st.probeID = str()
		if err != nil || len(b) == 0 {
			err = errCorruptState
			return nil
		}
		kind := b[0]
		b = b[1:]
		if kind == 1 {
			if len(b) < 32 {
				err = errCorruptState
				return nil
			}
			st.sha = hex.EncodeToString(b[:32])
			b = b[32:]
		} else {
			st.sha = str()
		}
		st.sinceRun = num()
		st.baseline = ref()
		st.baselineRun = num()
		st.baselineModel = ref()
		st.baselineObs = num()
		st.baselineScores = ref()
		st.candidate = ref()
		st.candidateRun = num()
		st.candidateRuns = int(num())
		st.candidateModel = ref()
		st.candidateObs = num()
		st.driftScores = ref()
		st.driftRuns = int(num())
		st.driftRun = num()
		st.lastVerdict = ref()
		st.changes = int(num())
		st.reverts = int(num())
		st.nondeterministic = num() != 0
		if format >= 3 {
			st.lastRevertRun = num()
			st.prevCandidate = ref()
		}
		if format >= 4 {
			st.scoresObs = num()
			st.scoresModel = ref()
			if driftModel && format == 4 {
				_ = ref()
			}
		}
		if format < 5 {
			upgradeReverts(st)
		}
		return st
	}
	for i := uint64(0); i < count && err == nil; i++ {
		if st := probe(); err == nil {
			out[st.probeID] = st
		}
	}
	if err == nil && absent && format >= 3 && len(b) > 0 {
		// Probes absent from the corpus (see stateFormat).
		gone := uv()
		if err == nil && gone > uint64(len(b)) {
			err = errCorruptState
		}
		for i := uint64(0); i < gone && err == nil; i++ {
			st := probe()
			if err != nil {
				break
			}
			if st.absentSince = num(); err == nil && st.absentSince <= 0 {
				err = errCorruptState
			}
			if _, dup := out[st.probeID]; dup {
				// One state per probe id: a blob naming an id twice is
				// not one this package wrote.
				err = errCorruptState
			}
			out[st.probeID] = st
		}
		if err == nil && len(b) > 0 {
			err = errCorruptState
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// loadStates returns the detection state of every probe of a target by
// probe id, probes absent from the corpus included (absentSince > 0).
func loadStates(ctx context.Context, q querier, targetID int64) (map[string]*state, error) {
	var blob []byte
	err := q.QueryRowContext(ctx, `SELECT states FROM probe_states WHERE target_id = ?`, targetID).Scan(&blob)
	if errors.Is(err, sql.ErrNoRows) {
		return map[string]*state{}, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeStates(blob)
}

// saveStates writes the target's states when any of them changed: a run
// where every probe held still costs no write.
func saveStates(ctx context.Context, tx *sql.Tx, targetID, run int64, states map[string]*state, changed bool) error {
	dirty := changed
	for _, st := range states {
		if st.dirty {
			dirty = true
			st.dirty = false
		}
	}
	if !dirty {
		return nil
	}
	present := 0
	for _, st := range states {
		if st.absentSince == 0 {
			present++
		}
	}
	// (An upsert, not a replace: the row's origin stays.)
	_, err := tx.ExecContext(ctx, `INSERT INTO probe_states (target_id, states, probes, updated_run) VALUES (?, ?, ?, ?)
		ON CONFLICT (target_id) DO UPDATE SET states = excluded.states, probes = excluded.probes, updated_run = excluded.updated_run`,
		targetID, encodeStates(states), present, run)
	return err
}

// States returns the detection state of every probe of a target that its
// latest complete run answered, sorted by probe id. Probes absent from the
// corpus since (their state is kept, see stateFormat) are not listed: they
// no longer count in the target's composition.
func States(ctx context.Context, db *sql.DB, targetID int64) ([]State, error) {
	m, err := loadStates(ctx, db, targetID)
	if err != nil {
		return nil, err
	}
	out := make([]State, 0, len(m))
	for _, st := range m {
		if st.absentSince > 0 {
			continue
		}
		out = append(out, State{ProbeID: st.probeID, RequestSHA256: st.sha, Baseline: st.baseline, LastVerdict: st.lastVerdict,
			Nondeterministic: st.nondeterministic, Changes: st.changes, Reverts: st.reverts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProbeID < out[j].ProbeID })
	return out, nil
}

// AllStates returns the states of every target, keyed by target id. A
// target's state that does not decode fails it (see ReadableStates).
func AllStates(ctx context.Context, db *sql.DB) (map[int64][]State, error) {
	return allStates(ctx, db, nil)
}

// ReadableStates returns the states of every target whose detection state
// decodes, keyed by target id, and the ids of the targets whose
// probe_states row does not (errCorruptState: detection leaves such a
// target out, DamagedStateError, until the row is removed), in id order.
// Any other error (the database unreadable) fails it, as AllStates.
func ReadableStates(ctx context.Context, db *sql.DB) (map[int64][]State, []int64, error) {
	damaged := []int64{}
	out, err := allStates(ctx, db, &damaged)
	if err != nil {
		return nil, nil, err
	}
	return out, damaged, nil
}

// DamagedParkedStates returns, by target id, how many of the states
// parked at endpoints the target left (parked_states rows) do not decode
// (errCorruptState): the target's detection at its current endpoint is
// unaffected, but its return to such an endpoint fails its detection
// (DamagedStateError), and retention keeps every observation of it
// (Pins.Targets), until the row is removed. Targets with none are absent.
// Any other error (the database unreadable) fails it.
func DamagedParkedStates(ctx context.Context, db *sql.DB) (map[int64]int, error) {
	rows, err := db.QueryContext(ctx, `SELECT target_id, states FROM parked_states`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id int64
		var blob []byte
		if err := rows.Scan(&id, &blob); err != nil {
			return nil, err
		}
		if _, err := decodeStates(blob); errors.Is(err, errCorruptState) {
			out[id]++
		} else if err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

// allStates reads every target's states; with damaged non-nil a state
// that does not decode is listed there instead of failing the read.
func allStates(ctx context.Context, db *sql.DB, damaged *[]int64) (map[int64][]State, error) {
	rows, err := db.QueryContext(ctx, `SELECT target_id FROM probe_states ORDER BY target_id`)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := map[int64][]State{}
	for _, id := range ids {
		sts, err := States(ctx, db, id)
		if damaged != nil && errors.Is(err, errCorruptState) {
			*damaged = append(*damaged, id)
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = sts
	}
	return out, nil
}

// loadCategories returns category -> first run for a target.
func loadCategories(ctx context.Context, tx *sql.Tx, targetID int64) (map[string]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT category, first_run FROM target_categories WHERE target_id = ?`, targetID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var c string
		var r int64
		if err := rows.Scan(&c, &r); err != nil {
			return nil, err
		}
		out[c] = r
	}
	return out, rows.Err()
}

// saveCategories stores categories learned in this run (negative markers).
func saveCategories(ctx context.Context, tx *sql.Tx, targetID int64, known map[string]int64, run int64) error {
	for c, r := range known {
		if r >= 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO target_categories (target_id, category, first_run) VALUES (?, ?, ?)`, targetID, c, run); err != nil {
			return err
		}
		known[c] = run
	}
	return nil
}

// Baselines returns the request fingerprint and baseline verdict key per
// probe of a target (for deciding when to take extra samples), probes
// absent from the corpus included: one restored with the same bytes is
// compared with that baseline.
func Baselines(ctx context.Context, db *sql.DB, targetID int64) (map[string]Baseline, error) {
	m, err := loadStates(ctx, db, targetID)
	if err != nil {
		return nil, err
	}
	return baselinesOf(m), nil
}

func baselinesOf(m map[string]*state) map[string]Baseline {
	out := make(map[string]Baseline, len(m))
	for id, st := range m {
		out[id] = Baseline{SHA256: st.sha, Verdict: st.baseline, Nondeterministic: st.nondeterministic}
	}
	return out
}

// BaselinesAt is Baselines of the target's detection state at origin: the
// current one when it belongs there (or either origin is not known, or it
// is one recorded before origins named the account, at origin's endpoint,
// which detection adopts: see moveOrigin), the one parked there when the
// target was at origin before, else none (a new endpoint establishes its
// baselines).
func BaselinesAt(ctx context.Context, db *sql.DB, targetID int64, origin string) (map[string]Baseline, error) {
	var cur string
	err := db.QueryRowContext(ctx, `SELECT origin FROM probe_states WHERE target_id = ?`, targetID).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (cur == "" || origin == "" || cur == origin)) {
		return Baselines(ctx, db, targetID)
	}
	if err != nil {
		return nil, err
	}
	if probes.UnscopedOrigin(cur) == cur && probes.UnscopedOrigin(origin) == cur {
		// A state recorded before origins named the account, which this
		// run's detection adopts (moveOrigin) when it is still to adopt.
		var unnamed bool
		if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM origin_scope_unnamed WHERE target_id = ?)`, targetID).Scan(&unnamed); err != nil {
			return nil, err
		}
		if unnamed {
			return Baselines(ctx, db, targetID)
		}
	}
	var blob []byte
	err = db.QueryRowContext(ctx, `SELECT states FROM parked_states WHERE target_id = ? AND origin = ?`, targetID, origin).Scan(&blob)
	if errors.Is(err, sql.ErrNoRows) {
		return map[string]Baseline{}, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := decodeStates(blob)
	if err != nil {
		return nil, err
	}
	return baselinesOf(m), nil
}

// Baseline is what the runner needs of a probe's state to decide extra
// samples: its request fingerprint, its baseline verdict key ("" while
// not established) and whether it is marked nondeterministic.
type Baseline struct {
	SHA256           string
	Verdict          string
	Nondeterministic bool
}

// CheckStates decodes every target's detection state and every state
// parked at an endpoint a target left, and returns a message for each that
// does not decode (detection of that target, or its return to that
// endpoint, fails until the row is removed: the target then establishes
// its baselines again, recorded as input changes with cause state). A
// database of a schema without the table (an old backup, a first run
// interrupted in its migrations) has none to check.
func CheckStates(ctx context.Context, db *sql.DB) ([]string, error) {
	var out []string
	check := func(query, what string) error {
		rows, err := db.QueryContext(ctx, `SELECT target_id, origin, states FROM (`+query+`)`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var target int64
			var origin string
			var blob []byte
			if err := rows.Scan(&target, &origin, &blob); err != nil {
				out = append(out, fmt.Sprintf("%s of target %d: unreadable: %v", what, target, err))
				continue
			}
			if _, err := decodeStates(blob); err != nil {
				out = append(out, damagedStateMessage(what, target, origin, err))
			}
		}
		return rows.Err()
	}
	for _, c := range stateTables {
		if ok, err := hasTable(ctx, db, c.table); err != nil || !ok {
			if err != nil {
				return out, err
			}
			continue // an older schema: none of these to check
		}
		if err := check(c.query, c.what); err != nil {
			return out, err
		}
	}
	return out, nil
}

// damagedStateMessage says that the detection state of target (what:
// "detection state", the probe_states row; "parked detection state", the
// parked_states row at origin) does not decode (err), what that stops and
// how to recover: db check lists it so, and a run whose detection fails on
// it (DamagedStateError) says the same.
func damagedStateMessage(what string, target int64, origin string, err error) string {
	where := ""
	if origin != "" {
		where = " at " + origin
	}
	fails := "its detection fails"
	if origin != "" {
		fails = "its detection fails on a return there"
	}
	return fmt.Sprintf("%s of target %d%s: %v (%s, and retention keeps every observation of the target, until the row is removed: %s; the target then establishes its baselines again, recorded as input changes with cause state)", what, target, where, err, fails, deleteStateSQL(target, origin))
}

// deleteStateSQL is the statement that removes the target's detection
// state (origin "": its probe_states row) or the state parked at origin.
func deleteStateSQL(target int64, origin string) string {
	if origin == "" {
		return fmt.Sprintf("DELETE FROM probe_states WHERE target_id = %d", target)
	}
	return fmt.Sprintf("DELETE FROM parked_states WHERE target_id = %d AND origin = '%s'", target, strings.ReplaceAll(origin, "'", "''"))
}

// stateTables are where detection states are kept, each with a query
// reading target_id, name (the target's), origin and states, and what its
// states are called in messages.
var stateTables = []struct{ table, query, what string }{
	{"probe_states", `SELECT s.target_id, COALESCE(t.name, '') AS name, '' AS origin, s.states FROM probe_states s LEFT JOIN targets t ON t.id = s.target_id`, "detection state"},
	{"parked_states", `SELECT s.target_id, COALESCE(t.name, '') AS name, s.origin, s.states FROM parked_states s LEFT JOIN targets t ON t.id = s.target_id`, "parked detection state"},
}

// hasTable reports whether the database has table name (a database of an
// older schema lacks the later ones).
func hasTable(ctx context.Context, db querier, name string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return n > 0, err
}

// citation is an observation a probe's state holds on to, and its role.
type citation struct {
	role string
	obs  int64
}

// cites returns the observations st holds on to (its baseline's answer,
// its pending candidate's, the one carrying its baseline's scores), each
// once: what retention keeps (LoadPins) and db check verifies
// (CheckCitations).
func (st *state) cites() []citation {
	var out []citation
	for _, c := range []citation{{"baseline", st.baselineObs}, {"candidate", st.candidateObs}, {"score baseline", st.scoresObs}} {
		if c.obs > 0 && !slices.ContainsFunc(out, func(o citation) bool { return o.obs == c.obs }) {
			out = append(out, c)
		}
	}
	return out
}

// CheckCitations returns a message for every observation that an event
// (a flip's before or after answer) or a detection state (a probe's
// baseline, the answer carrying its scores, or its pending candidate,
// parked states included) cites and the
// database lacks. Retention never deletes these (they are its pins), so a
// missing one was deleted outside driftprobe or lost to damage: the
// event's evidence does not verify, or the next flip's evidence would cite
// nothing. So is every cited observation that the database holds but that
// belongs to another target or probe than the one citing it (an id moved
// by an edit or damage): it is no evidence of the flip, and the event's
// evidence does not verify (or the next flip's would not). An observation
// whose target or probe column does not hold what the schema means is
// storage.Check's to report, not a mismatch. At most MaxCitationProblems
// messages; a state that does not
// decode, or a row whose columns do not hold what the schema means, is
// CheckStates' (or storage.Check's) to report. Tables a schema lacks are
// skipped. Everything is read in one read transaction, one snapshot of
// the database: a run committing meanwhile (moving a citation off an
// observation, and its retention deleting that one) is either wholly seen
// or not at all, never half (a missing citation that was never missing).
func CheckCitations(ctx context.Context, sqldb *sql.DB) (_ []string, err error) {
	db, err := sqldb.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer db.Rollback() // read only: nothing to commit
	var out []string
	add := func(msg string) {
		if len(out) < MaxCitationProblems {
			out = append(out, msg)
		} else if len(out) == MaxCitationProblems {
			out = append(out, "… further citation problems not listed")
		}
	}
	if ok, err := hasTable(ctx, db, "event_probes"); err != nil || !ok {
		return out, err
	}
	for _, side := range []string{"before", "after"} {
		rows, err := db.QueryContext(ctx, `SELECT ep.event_id, t.name, ep.probe_id, ep.`+side+`_obs FROM event_probes ep JOIN targets t ON t.id = ep.target_id
			WHERE typeof(ep.event_id) = 'integer' AND typeof(ep.probe_id) = 'text' AND typeof(ep.`+side+`_obs) = 'integer' AND ep.`+side+`_obs > 0 AND NOT EXISTS (SELECT 1 FROM observations o WHERE o.id = ep.`+side+`_obs) ORDER BY ep.event_id, t.name, ep.probe_id`)
		if err != nil {
			return out, err
		}
		for rows.Next() {
			var eid, obs int64
			var target, probe string
			if err := rows.Scan(&eid, &target, &probe, &obs); err != nil {
				rows.Close()
				return out, err
			}
			add(fmt.Sprintf("event %d, %s/%s: its %s observation %d is not in the database (retention keeps every observation an event cites: deleted outside driftprobe, or lost to damage); the event's evidence does not verify",
				eid, target, probe, side, obs))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return out, err
		}
		// Stored, but another target's or probe's answer.
		rows, err = db.QueryContext(ctx, `SELECT ep.event_id, t.name, ep.probe_id, ep.`+side+`_obs, o.target_id, COALESCE(ot.name, ''), o.probe_id
			FROM event_probes ep JOIN targets t ON t.id = ep.target_id JOIN observations o ON o.id = ep.`+side+`_obs LEFT JOIN targets ot ON ot.id = o.target_id
			WHERE typeof(ep.event_id) = 'integer' AND typeof(ep.probe_id) = 'text' AND typeof(ep.`+side+`_obs) = 'integer' AND ep.`+side+`_obs > 0
			AND typeof(o.target_id) = 'integer' AND typeof(o.probe_id) = 'text' AND (o.target_id != ep.target_id OR o.probe_id != ep.probe_id)
			ORDER BY ep.event_id, t.name, ep.probe_id`)
		if err != nil {
			return out, err
		}
		for rows.Next() {
			var eid, obs, otid int64
			var target, probe, otarget, oprobe string
			if err := rows.Scan(&eid, &target, &probe, &obs, &otid, &otarget, &oprobe); err != nil {
				rows.Close()
				return out, err
			}
			add(fmt.Sprintf("event %d, %s/%s: its %s observation %d is an observation of %s, probe %s, not of the event's %s/%s (an id moved by an edit outside driftprobe, or by damage); the event's evidence does not verify",
				eid, target, probe, side, obs, targetText(otarget, otid), oprobe, target, probe))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return out, err
		}
	}
	for _, c := range stateTables {
		if ok, err := hasTable(ctx, db, c.table); err != nil || !ok {
			if err != nil {
				return out, err
			}
			continue
		}
		type cite struct {
			target int64
			probe  string
			citation
		}
		var cites []cite
		var where []string
		rows, err := db.QueryContext(ctx, `SELECT target_id, name, origin, states FROM (`+c.query+`) ORDER BY target_id, origin`)
		if err != nil {
			return out, err
		}
		for rows.Next() {
			var tid int64
			var name, origin string
			var blob []byte
			if err := rows.Scan(&tid, &name, &origin, &blob); err != nil {
				rows.Close()
				return out, err
			}
			states, err := decodeStates(blob)
			if err != nil {
				continue // CheckStates reports it
			}
			w := fmt.Sprintf("%s of target %s", c.what, name)
			if origin != "" {
				w += " at " + origin
			}
			ids := make([]string, 0, len(states))
			for id := range states {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			for _, id := range ids {
				for _, x := range states[id].cites() {
					cites = append(cites, cite{tid, id, x})
					where = append(where, w)
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return out, err
		}
		for i, x := range cites {
			next := "flip"
			if x.role == "score baseline" {
				next = "score drift"
			}
			// Target and probe as stored: a column not holding what the
			// schema means is storage.Check's to report.
			var otid, oprobe any
			var otarget string
			err := db.QueryRowContext(ctx, `SELECT o.target_id, o.probe_id, COALESCE(t.name, '') FROM observations o LEFT JOIN targets t ON t.id = o.target_id WHERE o.id = ?`, x.obs).
				Scan(&otid, &oprobe, &otarget)
			if errors.Is(err, sql.ErrNoRows) {
				add(fmt.Sprintf("%s: probe %s's %s observation %d is not in the database (retention keeps it: deleted outside driftprobe, or lost to damage); the evidence of the probe's next %s would cite nothing",
					where[i], x.probe, x.role, x.obs, next))
				continue
			}
			if err != nil {
				return out, err
			}
			tid, tok := otid.(int64)
			p, pok := oprobe.(string)
			if tok && pok && (tid != x.target || p != x.probe) {
				add(fmt.Sprintf("%s: probe %s's %s observation %d is an observation of %s, probe %s (an id moved by an edit outside driftprobe, or by damage); the evidence of the probe's next %s would not verify",
					where[i], x.probe, x.role, x.obs, targetText(otarget, tid), p, next))
			}
		}
	}
	return out, nil
}

// targetText names a target for CheckCitations: "target NAME", or its id
// when the database holds no target of that id.
func targetText(name string, id int64) string {
	if name == "" {
		return fmt.Sprintf("target id %d (not in the database)", id)
	}
	return "target " + name
}

// MaxCitationProblems bounds CheckCitations' messages.
const MaxCitationProblems = 100
