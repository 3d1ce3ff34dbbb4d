package diff

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
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

// The states of a target are stored as one blob: a format byte (1), a
// uvarint count, then per probe its fields in stateFields order, strings as
// uvarint length + bytes and integers as varints.
const stateFormat = 1

func encodeStates(states map[string]*state) []byte {
	ids := make([]string, 0, len(states))
	size := 16
	for id, st := range states {
		ids = append(ids, id)
		size += len(id) + len(st.sha) + len(st.baseline) + len(st.baselineModel) + len(st.baselineScores) + len(st.candidate) +
			len(st.candidateModel) + len(st.driftScores) + len(st.lastVerdict) + 64
	}
	sort.Strings(ids)
	b := make([]byte, 0, size)
	b = append(b, stateFormat)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	num := func(n int64) { b = binary.AppendVarint(b, n) }
	for _, id := range ids {
		st := states[id]
		str(st.probeID)
		str(st.sha)
		num(st.sinceRun)
		str(st.baseline)
		num(st.baselineRun)
		str(st.baselineModel)
		num(st.baselineObs)
		str(st.baselineScores)
		str(st.candidate)
		num(st.candidateRun)
		num(int64(st.candidateRuns))
		str(st.candidateModel)
		num(st.candidateObs)
		str(st.driftScores)
		num(int64(st.driftRuns))
		num(st.driftRun)
		str(st.lastVerdict)
		num(int64(st.changes))
		num(int64(st.reverts))
		nd := int64(0)
		if st.nondeterministic {
			nd = 1
		}
		num(nd)
	}
	return b
}

var errCorruptState = errors.New("corrupt probe state")

func decodeStates(b []byte) (map[string]*state, error) {
	if len(b) == 0 {
		return map[string]*state{}, nil
	}
	if b[0] != stateFormat {
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
	count := uv()
	out := make(map[string]*state, count)
	for i := uint64(0); i < count && err == nil; i++ {
		st := &state{}
		st.probeID = str()
		st.sha = str()
		st.sinceRun = num()
		st.baseline = str()
		st.baselineRun = num()
		st.baselineModel = str()
		st.baselineObs = num()
		st.baselineScores = str()
		st.candidate = str()
		st.candidateRun = num()
		st.candidateRuns = int(num())
		st.candidateModel = str()
		st.candidateObs = num()
		st.driftScores = str()
		st.driftRuns = int(num())
		st.driftRun = num()
		st.lastVerdict = str()
		st.changes = int(num())
		st.reverts = int(num())
		st.nondeterministic = num() != 0
		out[st.probeID] = st
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

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
func saveStates(ctx context.Context, tx *sql.Tx, targetID, run int64, states map[string]*state) error {
	dirty := false
	for _, st := range states {
		if st.dirty {
			dirty = true
			st.dirty = false
		}
	}
	if !dirty {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO probe_states (target_id, states, probes, updated_run) VALUES (?, ?, ?, ?)`,
		targetID, encodeStates(states), len(states), run)
	return err
}

// States returns the detection state of every probe of a target, sorted
// by probe id.
func States(ctx context.Context, db *sql.DB, targetID int64) ([]State, error) {
	m, err := loadStates(ctx, db, targetID)
	if err != nil {
		return nil, err
	}
	out := make([]State, 0, len(m))
	for _, st := range m {
		out = append(out, State{ProbeID: st.probeID, RequestSHA256: st.sha, Baseline: st.baseline, LastVerdict: st.lastVerdict,
			Nondeterministic: st.nondeterministic, Changes: st.changes, Reverts: st.reverts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProbeID < out[j].ProbeID })
	return out, nil
}

// AllStates returns the states of every target, keyed by target id.
func AllStates(ctx context.Context, db *sql.DB) (map[int64][]State, error) {
	rows, err := db.QueryContext(ctx, `SELECT target_id FROM probe_states`)
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
	out := map[int64][]State{}
	for _, id := range ids {
		if out[id], err = States(ctx, db, id); err != nil {
			return nil, err
		}
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
// probe of a target (for deciding when to take extra samples).
func Baselines(ctx context.Context, db *sql.DB, targetID int64) (map[string][2]string, error) {
	m, err := loadStates(ctx, db, targetID)
	if err != nil {
		return nil, err
	}
	out := make(map[string][2]string, len(m))
	for id, st := range m {
		out[id] = [2]string{st.sha, st.baseline}
	}
	return out, nil
}
