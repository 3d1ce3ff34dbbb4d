package ghissue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/termtext"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// Limits. GitHub rejects issue and comment bodies over 65,536 characters
// and titles over 256; bodies are kept under MaxBodyBytes bytes (bytes >=
// characters, so this is safe for any text).
const (
	MaxBodyBytes = 60000
	MaxTitle     = 250
	maxMessage   = 1500 // runes of one provider message shown
	maxCell      = 200  // runes of one untrusted table cell
)

// Label is put on every issue driftprobe opens; the marker lookup lists
// issues by it.
const Label = "driftprobe"

// EventMarker is the hidden marker that identifies an event's issue.
func EventMarker(fingerprint string) string {
	return "<!-- driftprobe:event=" + fingerprint + " -->"
}

// UpdateMarker is the hidden marker that identifies the comment of update
// u of event ev, at the very start of the comment: the update's id, as
// every version wrote it (LegacyUpdateMarker: an older driftprobe still
// reads it after a downgrade), then its key (UpdateKey), which tells
// apart two updates of one id: a database restored from a backup hands
// out again the ids of updates it lost, whose comments are on the issue.
func UpdateMarker(ev *diff.Event, u diff.EventUpdate) string {
	return LegacyUpdateMarker(u.ID) + "<!-- driftprobe:key=" + UpdateKey(ev, u) + " -->"
}

// LegacyUpdateMarker is the marker of update id as driftprobe wrote it
// before markers carried a key.
func LegacyUpdateMarker(id int64) string {
	return "<!-- driftprobe:update=" + strconv.FormatInt(id, 10) + " -->"
}

// UpdateKey identifies update u of event ev beyond its database-local id:
// 16 hex digits of the SHA-256 of the event's fingerprint (unique across
// databases: it hashes the event's creation time) and the update's id,
// run, change, target, detail and recording time, each as the database
// stores it, so the key is the same whenever the update is read.
func UpdateKey(ev *diff.Event, u diff.EventUpdate) string {
	h := sha256.Sum256([]byte(strings.Join([]string{"driftprobe-update-key/1", ev.Fingerprint, strconv.FormatInt(u.ID, 10),
		strconv.FormatInt(u.RunID, 10), u.Change, u.Target, u.Detail, ts(u.At)}, "\x00")))
	return hex.EncodeToString(h[:8])
}

var updateMarkerRe = regexp.MustCompile(`^<!-- driftprobe:update=([0-9]+) -->(?:<!-- driftprobe:key=([0-9a-f]{16}) -->)?`)

// parseUpdateMarker reads the update marker a comment starts with: the
// update id and the key ("" for a legacy marker); ok is false when the
// comment does not start with one.
func parseUpdateMarker(body string) (id int64, key string, ok bool) {
	m := updateMarkerRe.FindStringSubmatch(body)
	if m == nil {
		return 0, "", false
	}
	id, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return id, m[2], true
}

var (
	commentHeadingRe  = regexp.MustCompile(`(?m)^### driftprobe update: (.*) \(run ([0-9]+)\)$`)
	commentRecordedRe = regexp.MustCompile(`(?m)^Recorded ([^ ]+)\. `)
	commentFooterRe   = regexp.MustCompile("<sub>driftprobe event `([A-Za-z0-9]+)`, update ([0-9]+)\\.</sub>")
)

// commentMatches reports whether body, a comment driftprobe posted with a
// legacy marker of u's id (no key), is u's comment and not that of
// another update that had the same id in a database since restored from
// a backup. It reads what CommentBody writes: the heading's run and the
// kind of change its words name, the time the update was recorded, the
// event's fingerprint and the update id in the footer. Each that the
// comment shows must be u's; one it does not show (a comment reworded by
// another version) decides nothing.
func commentMatches(body string, ev *diff.Event, u diff.EventUpdate) bool {
	if m := commentHeadingRe.FindStringSubmatch(body); m != nil {
		if m[2] != strconv.FormatInt(u.RunID, 10) {
			return false
		}
		if changes := headingChanges(m[1]); len(changes) > 0 && !slices.Contains(changes, u.Change) {
			return false
		}
	}
	if m := commentRecordedRe.FindStringSubmatch(body); m != nil {
		if t, err := time.Parse(time.RFC3339, m[1]); err == nil && !t.Equal(u.At.UTC().Truncate(time.Second)) {
			return false
		} else if err != nil && m[1] == "unknown" && !u.At.IsZero() {
			return false
		}
	}
	if m := commentFooterRe.FindStringSubmatch(body); m != nil {
		if m[1] != ev.Fingerprint || m[2] != strconv.FormatInt(u.ID, 10) {
			return false
		}
	}
	return true
}

// headingChanges returns the changes whose comment heading reads title
// (see updateTitle), none for a title this version does not write.
func headingChanges(title string) []string {
	var out []string
	for c, t := range changeTitles {
		if t == title {
			out = append(out, c)
		}
	}
	for _, t := range revertHeadings {
		if t == title {
			out = append(out, diff.ChangeReverted)
		}
	}
	for _, t := range partialHeadings {
		if t == title {
			out = append(out, diff.ChangePartialRevert)
		}
	}
	return out
}

var eventMarkerRe = regexp.MustCompile(`<!-- driftprobe:event=([A-Za-z0-9]+) -->`)

// markerOf returns the event fingerprint marked in an issue body.
func markerOf(body string) string {
	m := eventMarkerRe.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// Obs is what an issue shows of one observation.
type Obs struct {
	ID         int64
	RunID      int64
	Class      string
	Categories string
	RequestID  string
	ModelID    string
	ModelFP    string
	Reason     string
	Message    string
	ObservedAt time.Time
}

// Evidence is what an event's issue shows beyond the event itself.
type Evidence struct {
	Runs map[int64]storage.Run // first, confirmed, reverted runs, the last run before
	Obs  map[int64]Obs         // before/after observations by id
	// FirstFired holds, per target of the event, the run in which each
	// category first fired on it (the composition history detection keeps:
	// a category first fired in run R when detection met it blocking there
	// in R and never before). A comment names a category its update brings
	// as new to the target when it first fired in the update's run. Nil, or
	// a target or category missing from it: unknown, and comments fall back
	// on the event's new categories (see updateNews).
	FirstFired map[string]map[string]int64
}

// LoadEvidence reads the runs and observations an event's issue cites.
func LoadEvidence(ctx context.Context, db *storage.DB, ev *diff.Event) (*Evidence, error) {
	e := &Evidence{Runs: map[int64]storage.Run{}, Obs: map[int64]Obs{}}
	for _, id := range []int64{ev.FirstRun, ev.ConfirmedRun, ev.RevertedRun, e.eventBefore(ev)} {
		if id <= 0 {
			continue
		}
		if _, ok := e.Runs[id]; ok {
			continue
		}
		r, err := db.Run(ctx, id)
		if err != nil {
			continue // a pruned run: the issue says "unknown"
		}
		e.Runs[id] = r
	}
	var ids []int64
	for _, p := range ev.Probes {
		for _, id := range []int64{p.BeforeObs, p.AfterObs} {
			if id > 0 {
				ids = append(ids, id)
			}
		}
	}
	// Each through the store's reader: a damaged row (storage.ErrDamagedRow)
	// or one SQLite cannot read is left out — the issue shows nothing of it
	// (db check and evidence name it) — and never stops delivery.
	for _, id := range ids {
		o, err := db.Observation(ctx, id)
		switch {
		case storage.IsDamagedRow(err) || storage.IsCorrupt(err) || errors.Is(err, storage.ErrNotFound):
			continue
		case err != nil:
			return nil, err
		}
		e.Obs[o.ID] = Obs{ID: o.ID, RunID: o.RunID, Class: string(o.Result.Class), Categories: strings.Join(o.Result.Categories, ","),
			RequestID: o.Result.RequestID, ModelID: o.Result.ModelID, ModelFP: o.Result.ModelFP, Reason: o.Result.Reason, Message: o.Result.Message, ObservedAt: o.ObservedAt}
	}
	if err := e.loadFirstFired(ctx, db, ev); err != nil {
		return nil, err
	}
	return e, nil
}

// runBefore returns the last run before p's flip at the endpoint it
// flipped at: p.LastRunBefore, else p's BeforeRun (the run of its before
// observation: at that endpoint, but possibly earlier). 0 when neither is
// known: a row without a before observation (or with one from p's own
// first run, as a nondeterministic probe that had no baseline cites);
// callers fall back on the run before the flip was first seen, as before
// endpoints were kept.
func (e *Evidence) runBefore(p diff.EventProbe) int64 {
	if p.LastRunBefore > 0 && p.LastRunBefore < p.FirstRun {
		return p.LastRunBefore
	}
	if p.BeforeRun > 0 && p.BeforeRun < p.FirstRun {
		return p.BeforeRun
	}
	return 0
}

// firstBefore returns the earliest runBefore of ps, 0 when none of them
// knows one.
func (e *Evidence) firstBefore(ps []diff.EventProbe) int64 {
	var from int64
	for _, p := range ps {
		if r := e.runBefore(p); r > 0 && (from == 0 || r < from) {
			from = r
		}
	}
	return from
}

// eventBefore returns the last run before ev at the endpoints its probes
// flipped at (firstBefore), or, when no probe knows one, the run before
// ev was first seen; 0 when there is none.
func (e *Evidence) eventBefore(ev *diff.Event) int64 {
	if r := e.firstBefore(ev.Probes); r > 0 {
		return r
	}
	return max(ev.FirstRun-1, 0)
}

// loadFirstFired fills e.FirstFired for ev's targets (and its probes').
func (e *Evidence) loadFirstFired(ctx context.Context, db *storage.DB, ev *diff.Event) error {
	var names []string
	for _, n := range append(append([]string{ev.Target}, ev.Targets...), probeTargets(ev.Probes)...) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	rows, err := db.SQL().QueryContext(ctx, `SELECT t.name, tc.category, tc.first_run FROM target_categories tc JOIN targets t ON t.id = tc.target_id
		WHERE t.name IN (`+strings.TrimSuffix(strings.Repeat("?,", len(names)), ",")+`)`, args...)
	if err != nil {
		return fmt.Errorf("categories first fired: %w", err)
	}
	defer rows.Close()
	e.FirstFired = map[string]map[string]int64{}
	for rows.Next() {
		var target, cat string
		var run int64
		if err := rows.Scan(&target, &cat, &run); err != nil {
			return fmt.Errorf("categories first fired: %w", err)
		}
		if e.FirstFired[target] == nil {
			e.FirstFired[target] = map[string]int64{}
		}
		e.FirstFired[target][cat] = run
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("categories first fired: %w", err)
	}
	return nil
}

// probeTargets returns the targets of ps, in order, without repeats.
func probeTargets(ps []diff.EventProbe) []string {
	var out []string
	for _, p := range ps {
		if !slices.Contains(out, p.Target) {
			out = append(out, p.Target)
		}
	}
	return out
}

var kindTitles = map[string]string{
	diff.KindPolicy:         "Provider policy change",
	diff.KindModel:          "Model change",
	diff.KindScoreDrift:     "Score drift",
	diff.KindNondeterminism: "Nondeterministic verdicts",
}

// movedOn reports whether a probe left ev because its verdict moved on
// rather than back.
func movedOn(ev *diff.Event) bool {
	for _, p := range ev.Probes {
		if p.MovedOn {
			return true
		}
	}
	return false
}

func kindTitle(k string) string {
	if t, ok := kindTitles[k]; ok {
		return t
	}
	return "Change (" + k + ")"
}

func isBlocked(c probes.Class) bool {
	switch c {
	case probes.BlockedInput, probes.BlockedOutput, probes.ModelRefusal, probes.AbuseBlock:
		return true
	}
	return false
}

// where names the event's scope: one target, or a provider across several.
func where(ev *diff.Event) string {
	if len(ev.Targets) > 1 {
		return fmt.Sprintf("%s (%d targets: %s)", ev.Provider, len(ev.Targets), strings.Join(ev.Targets, ", "))
	}
	return ev.Target
}

// Title renders the issue title, e.g. "Provider policy change on
// azure-gpt4o-eastus: 7 probes now blocked (violence, new: self_harm)".
//
// The title describes what still holds. While some probes have left an
// open event (flipped back, moved on or withdrawn as nondeterministic),
// the counts and categories are those of the probes still flipped, the
// new categories only those they still block, and a bracket says how many
// of the event's probes left and how, as the comments count them
// (leftCounts): "5 probes now blocked (hate) [21 of 26 reverted]". Once
// no probe holds (status reverted), the title names the change the event
// recorded, every probe, and ends [reverted], [ended] or [retracted].
func Title(ev *diff.Event) string {
	ps := ev.Probes
	var live []diff.EventProbe
	for _, p := range ev.Probes {
		if !p.Reverted { // Reverted covers moved-on and withdrawn probes too
			live = append(live, p)
		}
	}
	ended := ev.Status == diff.StatusReverted || (len(live) == 0 && len(ev.Probes) > 0)
	partial := !ended && len(live) < len(ev.Probes)
	if partial {
		ps = live
	}
	up, down := 0, 0
	var cats []string
	for _, p := range ps {
		b, a := isBlocked(p.Before.Class), isBlocked(p.After.Class)
		switch {
		case a && !b:
			up++
		case b && !a:
			down++
		}
		// The categories that changed: a probe blocked before and after
		// (one category more, say) names only the one it gained.
		gained, lost := gainedLost(p)
		cats = append(cats, gained...)
		if ev.Direction != diff.Tightened {
			cats = append(cats, lost...)
		}
	}
	var what string
	n := len(ps)
	switch {
	case ev.Kind == diff.KindScoreDrift:
		what = termtext.Count(n, "probe's scores moved", "probes' scores moved") + " (" + ev.Direction + ")"
	case ev.Kind == diff.KindNondeterminism:
		what = termtext.Count(n, "probe flips on identical bytes", "probes flip on identical bytes")
	case ev.Direction == diff.Tightened && up == n:
		what = termtext.Count(n, "probe now blocked", "probes now blocked")
	case ev.Direction == diff.Tightened:
		// Some were blocked already and only gained a category or stage.
		what = termtext.Count(n, "probe stricter", "probes stricter") + fmt.Sprintf(", %d now blocked", up)
	case ev.Direction == diff.Loosened && down == n:
		what = termtext.Count(n, "probe now allowed", "probes now allowed")
	case ev.Direction == diff.Loosened:
		what = termtext.Count(n, "probe looser", "probes looser") + fmt.Sprintf(", %d now allowed", down)
	case ev.Direction == diff.Recategorized:
		what = termtext.Count(n, "probe recategorized", "probes recategorized")
	case partial && up == n:
		// A mixed event whose probes still flipped all went one way (the
		// others flipped back): the title says what still holds.
		what = termtext.Count(n, "probe now blocked", "probes now blocked")
	case partial && down == n:
		what = termtext.Count(n, "probe now allowed", "probes now allowed")
	default:
		what = termtext.Count(n, "probe changed", "probes changed") + fmt.Sprintf(" (%d now blocked, %d now allowed)", up, down)
	}
	changed := probes.SortedUnique(cats)
	newCats := map[string]bool{}
	var fresh []string
	for _, c := range ev.NewCategories {
		newCats[c] = true
		// A new category only the probes that left the event brought no
		// longer holds.
		if safeToken(c) && (!partial || slices.Contains(changed, c)) {
			fresh = append(fresh, c)
		}
	}
	var old []string
	for _, c := range changed {
		if !newCats[c] && safeToken(c) { // the normalized vocabulary; anything else stays out of titles
			old = append(old, c)
		}
	}
	parts := old
	if len(fresh) > 0 {
		parts = append(parts, "new: "+strings.Join(fresh, ", "))
	}
	t := ": " + what
	if len(parts) > 0 {
		t += " (" + strings.Join(parts, ", ") + ")"
	}
	switch {
	case ended:
		switch {
		case retracted(ev):
			t += " [retracted]"
		case movedOn(ev):
			// Not every probe went back: the change ended, the provider
			// did not (only) revert it.
			t += " [ended]"
		default:
			t += " [reverted]"
		}
	case partial:
		t += " [" + leftNote(ev.Probes) + "]"
	}
	return fitTitle(kindTitle(ev.Kind)+" on ", ev, t)
}

// fitTitle returns the title head + where + tail (tail: what changed, the
// categories and the status) in at most MaxTitle runes. When it does not
// fit, the scope gives way first, so that what changed and whether it
// still holds survive: a provider-wide event lists as many of its targets
// as fit ("azure (8 targets: a, b, +6 more)"), else none ("azure (8
// targets)"); one target's long name is cut ("…"). Only when even that
// does not fit is the whole title cut. Deterministic: ensureState edits a
// title only when it differs from this.
func fitTitle(head string, ev *diff.Event, tail string) string {
	fits := func(w string) (string, bool) {
		t := titleText(head+w+tail, 0)
		return t, utf8.RuneCountInString(t) <= MaxTitle
	}
	if t, ok := fits(where(ev)); ok {
		return t
	}
	if len(ev.Targets) > 1 {
		for k := len(ev.Targets) - 1; k >= 1; k-- {
			w := fmt.Sprintf("%s (%d targets: %s, +%d more)", ev.Provider, len(ev.Targets), strings.Join(ev.Targets[:k], ", "), len(ev.Targets)-k)
			if t, ok := fits(w); ok {
				return t
			}
		}
		w := fmt.Sprintf("%s (%d targets)", ev.Provider, len(ev.Targets))
		if t, ok := fits(w); ok {
			return t
		}
		return titleText(head+w+tail, MaxTitle)
	}
	// One target: cut its name to what is left once the rest is counted.
	rest := utf8.RuneCountInString(titleText(head+tail, 0))
	if room := MaxTitle - rest - 1; room >= 16 {
		for n := room; n >= 16; n-- {
			if t, ok := fits(truncRunes(ev.Target, n)); ok {
				return t
			}
		}
	}
	return titleText(head+where(ev)+tail, MaxTitle)
}

// leftNote says how many of ps (an event's probes, some of which left it)
// left, and how, in leftCounts' terms: "21 of 26 reverted", "3 of 9 no
// longer hold: 1 reverted, 2 moved on".
func leftNote(ps []diff.EventProbe) string {
	back, moved, withdrawn := leftCounts(ps)
	var parts []string
	for _, x := range []struct {
		n    int
		what string
	}{{back, "reverted"}, {moved, "moved on"}, {withdrawn, "withdrawn"}} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	left := back + moved + withdrawn
	if len(parts) == 1 {
		return fmt.Sprintf("%d of %d %s", left, len(ps), parts[0][strings.IndexByte(parts[0], ' ')+1:])
	}
	return fmt.Sprintf("%d of %d no longer hold: %s", left, len(ps), strings.Join(parts, ", "))
}

// gainedLost returns the categories p's verdict gained and lost, counting
// a verdict's categories only when it blocks: allowed → blocked[hate]
// gains hate; blocked[hate] → blocked[hate,weapons] gains only weapons;
// blocked_output[hate] → blocked_input[hate] gains nothing.
func gainedLost(p diff.EventProbe) (gained, lost []string) {
	before, after := p.Before.Categories, p.After.Categories
	if !isBlocked(p.Before.Class) {
		before = nil
	}
	if !isBlocked(p.After.Class) {
		after = nil
	}
	return catDiff(after, before), catDiff(before, after)
}

// catDiff returns the categories of a not in b.
func catDiff(a, b []string) []string {
	var out []string
	for _, c := range a {
		if !slices.Contains(b, c) {
			out = append(out, c)
		}
	}
	return out
}

// Labels returns the issue's labels: driftprobe, the kind, the provider and
// the configured extras, without duplicates.
func Labels(ev *diff.Event, extra []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range append([]string{Label, ev.Kind, ev.Provider}, extra...) {
		l = truncRunes(strings.TrimSpace(clean(l, false)), 50)
		if l == "" || seen[strings.ToLower(l)] {
			continue
		}
		seen[strings.ToLower(l)] = true
		out = append(out, l)
	}
	return out
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}

func (e *Evidence) runLine(id int64) string {
	if id <= 0 {
		return "—"
	}
	r, ok := e.Runs[id]
	if !ok {
		return fmt.Sprintf("run %d (not in the database)", id)
	}
	return fmt.Sprintf("run %d, started %s", id, fmtTime(r.StartedAt))
}

func verdictCell(v diff.Verdict) string {
	return code(v.String())
}

// model renders a stored "model id|fingerprint" (diff.JoinModel).
func model(s string) string {
	id, fp := diff.SplitModel(s)
	if id == "" && fp == "" {
		return "unknown"
	}
	return "model " + code(id) + ", fingerprint " + code(fp)
}

func (e *Evidence) requestID(id int64) string {
	if o, ok := e.Obs[id]; ok && o.RequestID != "" {
		return code(truncRunes(o.RequestID, maxCell))
	}
	return "—"
}

func probeRow(ev *diff.Event, e *Evidence, p diff.EventProbe) string {
	after := verdictCell(p.After)
	switch {
	case p.Withdrawn:
		after += fmt.Sprintf(" (withdrawn in run %d: nondeterministic)", p.RevertedRun)
	case p.MovedOn:
		// It left without going back to its before-verdict: the change
		// no longer holds for it, but nothing was reverted.
		after += fmt.Sprintf(" (moved on in run %d)", p.RevertedRun)
	case p.Reverted:
		after += fmt.Sprintf(" (reverted in run %d)", p.RevertedRun)
	}
	// Score drift: the verdict held, these scores moved (provider keys:
	// each through code, which neutralizes anything but a safe token).
	for i, m := range p.ScoreMoves {
		if i == 3 {
			after += fmt.Sprintf(", +%d more", len(p.ScoreMoves)-3)
			break
		}
		sep := ", "
		if i == 0 {
			sep = "; scores moved: "
		}
		after += sep + code(truncRunes(m.Key, 40)) + " " + strconv.FormatFloat(m.Before, 'f', -1, 64) + " → " + strconv.FormatFloat(m.After, 'f', -1, 64)
	}
	return fmt.Sprintf("| %s | %s | %s | %s → %s | %s → %s | run %d |\n",
		code(p.Target), code(truncRunes(p.ProbeID, maxCell)), code(p.RequestSHA256),
		verdictCell(p.Before), after, e.requestID(p.BeforeObs), e.requestID(p.AfterObs), p.ConfirmedRun)
}

const tableHead = "| Target | Probe | Request SHA-256 | Before → after verdict | Provider request id (before → after) | Confirmed |\n" +
	"|---|---|---|---|---|---|\n"

func messageBlock(p diff.EventProbe, e *Evidence) string {
	var b strings.Builder
	for _, side := range []struct {
		name string
		id   int64
	}{{"before", p.BeforeObs}, {"after", p.AfterObs}} {
		o, ok := e.Obs[side.id]
		if !ok || o.Message == "" {
			continue
		}
		fmt.Fprintf(&b, "**%s / %s**, %s (run %d): reason %s\n\n", code(p.Target), code(truncRunes(p.ProbeID, maxCell)), side.name, o.RunID, orDash(inert(o.Reason, maxCell)))
		b.WriteString(fenced(o.Message, maxMessage))
		b.WriteString("\n")
	}
	return b.String()
}

// reproduce renders the issue's commands: per target, driftprobe diff from
// the last run before its flips at the endpoint they were seen at
// (firstBefore; the run before the event was first seen when its probes
// know none) to the event's confirmation, and over every probe of the
// target listed when some were confirmed later.
func reproduce(ev *diff.Event, e *Evidence) string {
	var cmds []string
	targets := ev.Targets
	if len(targets) == 0 {
		targets = []string{ev.Target}
	}
	for _, t := range targets {
		mine := probesOn(ev.Probes, t)
		from := e.firstBefore(mine)
		// A known before run past the event's confirmation: every probe
		// of t flipped after it (a target that joined later), and the
		// command below covers them.
		show := from < ev.ConfirmedRun
		if from == 0 {
			from, show = ev.FirstRun-1, true
			if from < 1 {
				from = ev.FirstRun
			}
		}
		if show {
			cmds = append(cmds, fmt.Sprintf("driftprobe diff --target %s --from %d --to %d", shellWord(t), from, ev.ConfirmedRun))
		}
		// Probes of t confirmed after the event was (more probes since, or
		// a target that joined later): a range that covers them too.
		if f, to, ok := flipRange(e, mine); ok && to > ev.ConfirmedRun {
			cmds = append(cmds, fmt.Sprintf("driftprobe diff --target %s --from %d --to %d   # every probe of this target listed above", shellWord(t), f, to))
		}
	}
	cmds = append(cmds, "driftprobe events --json", fmt.Sprintf("driftprobe evidence %d --json > evidence-%d.json   # the hash-verifiable record", ev.ID, ev.ID))
	return "### How to reproduce\n\nRun against the driftprobe database that filed this issue:\n\n" +
		fenced(strings.Join(cmds, "\n"), 10000) + "\n"
}

// eventTargets returns ev's targets in the order it names them, then its
// own target and those of its probes if it does not, without repeats.
func eventTargets(ev *diff.Event) []string {
	var out []string
	for _, n := range append(append(slices.Clone(ev.Targets), ev.Target), probeTargets(ev.Probes)...) {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// maxEndpoints bounds the endpoints named for one target.
const maxEndpoints = 5

// endpoints renders the endpoints ps (probes of one target) flipped at
// (their Origin: untrusted, a configured base URL's scheme and host or a
// prober's own name), each made inert, in order and without repeats; ""
// when none is recorded (rows from before origins were kept).
func endpoints(ps []diff.EventProbe) string {
	var seen, parts []string
	for _, p := range ps {
		if p.Origin == "" || slices.Contains(seen, p.Origin) {
			continue
		}
		seen = append(seen, p.Origin)
		if len(seen) > maxEndpoints {
			continue
		}
		parts = append(parts, code(truncRunes(p.Origin, maxCell)))
	}
	if n := len(seen) - maxEndpoints; n > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", n))
	}
	return strings.Join(parts, ", ")
}

// probesOn returns the probes of ps on target.
func probesOn(ps []diff.EventProbe, target string) []diff.EventProbe {
	var out []diff.EventProbe
	for _, p := range ps {
		if p.Target == target {
			out = append(out, p)
		}
	}
	return out
}

// flipRange returns the runs driftprobe diff compares to show the flips
// of ps (probes of one target): from the last run before the first of
// them was first seen, at the endpoint it flipped at (runBefore; the run
// before it was first seen when not known), when every one still held its
// before-verdict, to the last run that confirmed one (every one held its
// after-verdict then, unless it flipped back since). ok is false when ps
// is empty or the range is empty.
func flipRange(e *Evidence, ps []diff.EventProbe) (from, to int64, ok bool) {
	for i, p := range ps {
		b := e.runBefore(p)
		if b == 0 {
			b = p.FirstRun - 1
		}
		if i == 0 || b < from {
			from = b
		}
		to = max(to, p.ConfirmedRun)
	}
	from = max(from, 1)
	return from, to, len(ps) > 0 && from < to
}

// revertRange returns the runs driftprobe diff compares to show how ps
// (probes of one target that left an event in run: flipped back, moved on
// or withdrawn) left it: from the last run that confirmed one of them
// (every one held its after-verdict then) to run.
func revertRange(ps []diff.EventProbe, run int64) (from, to int64, ok bool) {
	for _, p := range ps {
		from = max(from, p.ConfirmedRun)
	}
	return from, run, len(ps) > 0 && from >= 1 && from < run
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9._/-]+$`)

func shellWord(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// IssueBody renders the issue body of an event, within MaxBodyBytes.
func IssueBody(ev *diff.Event, e *Evidence) string {
	if e == nil {
		e = &Evidence{}
	}
	var h strings.Builder
	h.WriteString(EventMarker(ev.Fingerprint) + "\n")
	fmt.Fprintf(&h, "## %s on %s\n\n", kindTitle(ev.Kind), inert(where(ev), 2000))
	switch ev.Kind {
	case diff.KindPolicy, diff.KindModel:
		if retracted(ev) {
			h.WriteString("driftprobe sends the same probe bytes to this target on every run. The probes below got a different " +
				"verdict on byte-identical requests, but have since answered differently from run to run (nondeterministic): " +
				"their flips are not evidence of a policy change, and the event is **retracted**.\n\n")
			break
		}
		if ev.Status == diff.StatusReverted {
			// Filed after the event ended (a delayed delivery): the
			// change is told in the past, and how it ended is said as
			// the revert comment says it.
			h.WriteString("driftprobe sends the same probe bytes to this target on every run. The probes below got a different " +
				"verdict **on byte-identical requests** (same request SHA-256 before and after), confirmed across runs: " +
				"the provider changed, not the content.\n\n")
			fmt.Fprintf(&h, "**Ended in run %d.** %s\n\n", ev.RevertedRun, endedText(ev.Probes))
			break
		}
		h.WriteString("driftprobe sends the same probe bytes to this target on every run. The probes below now get a different " +
			"verdict **on byte-identical requests** (same request SHA-256 before and after), confirmed across runs: " +
			"the provider changed, not the content.\n\n")
	case diff.KindScoreDrift:
		h.WriteString("Scores on byte-identical requests moved beyond the configured tolerance without a verdict flip: an early warning of a threshold or classifier change.\n\n")
	case diff.KindNondeterminism:
		h.WriteString("These probes change verdict back and forth on byte-identical requests: they sit near a threshold. Their flips are not evidence of a policy change.\n\n")
	}
	h.WriteString("| | |\n|---|---|\n")
	fmt.Fprintf(&h, "| Event fingerprint | `%s` |\n", ev.Fingerprint)
	fmt.Fprintf(&h, "| Kind | %s |\n", code(ev.Kind))
	fmt.Fprintf(&h, "| Direction | %s |\n", code(ev.Direction))
	fmt.Fprintf(&h, "| Status | %s |\n", code(ev.Status))
	fmt.Fprintf(&h, "| Provider | %s |\n", code(ev.Provider))
	fmt.Fprintf(&h, "| Targets | %s |\n", inert(strings.Join(ev.Targets, ", "), 2000))
	for _, t := range eventTargets(ev) {
		if o := endpoints(probesOn(ev.Probes, t)); o != "" {
			fmt.Fprintf(&h, "| Endpoint of %s | %s |\n", code(t), o)
		}
	}
	if len(ev.NewCategories) > 0 {
		fmt.Fprintf(&h, "| **New categories** (never fired on this target before) | **%s** |\n", inert(strings.Join(ev.NewCategories, ", "), 500))
	}
	if len(ev.VanishedCategories) > 0 {
		fmt.Fprintf(&h, "| Vanished categories | %s |\n", inert(strings.Join(ev.VanishedCategories, ", "), 500))
	}
	fmt.Fprintf(&h, "| Corpus | version %s, SHA-256 %s |\n", code(truncRunes(ev.CorpusVersion, 100)), code(ev.CorpusHash))
	if from := e.eventBefore(ev); from > 0 {
		fmt.Fprintf(&h, "| Last run before | %s |\n", e.runLine(from))
	}
	fmt.Fprintf(&h, "| First seen | %s |\n", e.runLine(ev.FirstRun))
	fmt.Fprintf(&h, "| Confirmed | %s |\n", e.runLine(ev.ConfirmedRun))
	if ev.RevertedRun > 0 {
		label := "Reverted"
		if _, moved, _ := leftCounts(ev.Probes); moved > 0 {
			label = "Ended" // not every probe went back: see endedText
		}
		fmt.Fprintf(&h, "| %s | %s |\n", label, e.runLine(ev.RevertedRun))
	}
	fmt.Fprintf(&h, "| Model before | %s |\n", model(ev.ModelBefore))
	fmt.Fprintf(&h, "| Model after | %s |\n", model(ev.ModelAfter))
	h.WriteString("\n")

	repro := reproduce(ev, e)
	foot := fmt.Sprintf("\n---\n<sub>Filed by driftprobe. Event fingerprint: `%s` (also in a hidden marker driftprobe uses to find this issue again: please keep it).</sub>\n", ev.Fingerprint)

	rows := make([]string, len(ev.Probes))
	for i, p := range ev.Probes {
		rows[i] = probeRow(ev, e, p)
	}
	var msgs []string
	for _, p := range ev.Probes {
		if m := messageBlock(p, e); m != "" {
			msgs = append(msgs, m)
		}
	}
	heading := "Flipped probes"
	switch ev.Kind {
	case diff.KindScoreDrift:
		heading = "Probes whose scores moved (verdicts held)"
	case diff.KindNondeterminism:
		heading = "Probes that flip on identical bytes"
	}
	table := fmt.Sprintf("### %s (%d)\n\n", heading, len(ev.Probes)) + tableHead
	return assemble(h.String(), table, rows, msgs, repro+foot, ev, e)
}

// assemble joins head, the table rows and the message blocks that fit, and
// tail, within MaxBodyBytes, with a note when rows or messages were left
// out (its command from the last run before the event's target's flips,
// as reproduce's).
func assemble(head, table string, rows, msgs []string, tail string, ev *diff.Event, e *Evidence) string {
	const reserve = 600 // for the truncation notes
	budget := MaxBodyBytes - len(head) - len(table) - len(tail) - reserve
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(table)
	shown := 0
	for _, r := range rows {
		if len(r) > budget {
			break
		}
		b.WriteString(r)
		budget -= len(r)
		shown++
	}
	if shown < len(rows) {
		from := e.firstBefore(probesOn(ev.Probes, ev.Target))
		if from == 0 || from >= ev.ConfirmedRun {
			from = max(ev.FirstRun-1, 1)
		}
		fmt.Fprintf(&b, "\n**%d more flipped probe(s) not shown** (issue size limit). The full list: `driftprobe events --json`, or %s.\n",
			len(rows)-shown, "`driftprobe diff --target "+shellWord(ev.Target)+fmt.Sprintf(" --from %d --to %d`", from, ev.ConfirmedRun))
	}
	b.WriteString("\n")
	if len(msgs) > 0 {
		const open = "<details><summary>Provider reasons and messages (untrusted text, verbatim)</summary>\n\n"
		const closeTag = "</details>\n\n"
		if budget > len(open)+len(closeTag)+200 {
			budget -= len(open) + len(closeTag)
			b.WriteString(open)
			n := 0
			for _, m := range msgs {
				if len(m) > budget {
					break
				}
				b.WriteString(m)
				budget -= len(m)
				n++
			}
			if n < len(msgs) {
				fmt.Fprintf(&b, "%d more message(s) not shown (issue size limit): `driftprobe events --json` and the stored observations have them.\n\n", len(msgs)-n)
			}
			b.WriteString(closeTag)
		} else {
			b.WriteString("Provider messages not shown (issue size limit).\n\n")
		}
	}
	b.WriteString(tail)
	return capBody(b.String())
}

// capBody is the last guard: never more than MaxBodyBytes.
func capBody(s string) string {
	if len(s) <= MaxBodyBytes {
		return s
	}
	const note = "\n\n[truncated: issue size limit]\n"
	cut := MaxBodyBytes - len(note)
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func itoa(n int) string { return strconv.Itoa(n) }

var changeTitles = map[string]string{
	diff.ChangeOpened:         "event opened",
	diff.ChangeProbesAdded:    "more probes flipped",
	diff.ChangeTargetJoined:   "another target of the provider changed the same way",
	diff.ChangeReverted:       "the change was reverted",
	diff.ChangePartialRevert:  "some probes flipped back",
	diff.ChangeKindEscalation: "the event's kind changed",
	diff.ChangeWithdrawn:      "probes withdrawn: they proved nondeterministic",
	diff.ChangeRetracted:      "the event was retracted: its probes proved nondeterministic",
}

// CommentBody renders the comment for one event update, within
// MaxBodyBytes. closing says the issue is being closed with it.
func CommentBody(ev *diff.Event, u diff.EventUpdate, e *Evidence, closing bool) string {
	if e == nil {
		e = &Evidence{}
	}
	var h strings.Builder
	h.WriteString(UpdateMarker(ev, u) + "\n")
	// The probes this update is about: on its target, flipped (or that
	// left the event) in its run.
	target := updateTarget(ev, u)
	var mine []diff.EventProbe
	for _, p := range ev.Probes {
		if inUpdate(p, u, target) {
			mine = append(mine, p)
		}
	}
	fmt.Fprintf(&h, "### driftprobe update: %s (run %d)\n\n", updateTitle(ev, u, mine), u.RunID)
	// Composition first: a category the update brings is said before
	// anything else.
	h.WriteString(compositionNote(ev, u, e, mine))
	if u.Detail != "" {
		h.WriteString(inert(u.Detail, 3000) + "\n\n")
	}
	fmt.Fprintf(&h, "Recorded %s. ", fmtTime(u.At))
	// "reverted" counts the probes back on their before-verdicts only: a
	// probe that moved on reverted nothing.
	reverted, movedOn, withdrawn := leftCounts(ev.Probes)
	gone := ""
	if movedOn > 0 {
		gone += fmt.Sprintf(", %d moved on (the change no longer holds for %s)", movedOn, pronoun(movedOn))
	}
	if withdrawn > 0 {
		gone += fmt.Sprintf(", %d withdrawn (nondeterministic)", withdrawn)
	}
	fmt.Fprintf(&h, "Event status: %s; %s flipped, %d reverted%s; kind %s, direction %s.\n\n",
		code(ev.Status), termtext.Count(len(ev.Probes), "probe", "probes"), reverted, gone, code(ev.Kind), code(ev.Direction))
	switch u.Change {
	case diff.ChangeReverted:
		h.WriteString(endedText(ev.Probes))
		if closing {
			h.WriteString(" Closing this issue as completed (the change it tracked has ended; the evidence above stays valid).")
		}
		h.WriteString("\n\n")
	case diff.ChangeWithdrawn, diff.ChangeRetracted:
		h.WriteString("These probes answered byte-identical requests differently from run to run (nondeterministic, near a threshold or sampled at the output): their flips are not evidence of a policy change and no longer count for this event.")
		if u.Change == diff.ChangeRetracted {
			h.WriteString(" No probe is left: the event is retracted; the provider did not necessarily change anything.")
			if closing {
				h.WriteString(" Closing this issue as not planned.")
			}
		}
		h.WriteString("\n\n")
	}
	var rows, msgs []string
	for _, p := range mine {
		rows = append(rows, probeRow(ev, e, p))
		if !leaves(u.Change) {
			if m := messageBlock(p, e); m != "" {
				msgs = append(msgs, m)
			}
		}
	}
	table := ""
	if len(rows) > 0 {
		table = fmt.Sprintf("#### Probes in this update (%d)\n\n", len(rows)) + tableHead
	}
	// The commands sit in the tail, which the size limit never cuts.
	tail := updateRepro(ev, u, e, mine) + fmt.Sprintf("\n<sub>driftprobe event `%s`, update %d.</sub>\n", ev.Fingerprint, u.ID)
	return assemble(h.String(), table, rows, msgs, tail, ev, e)
}

// leaves reports whether an update of this change takes probes out of
// its event (they flipped back, moved on, or proved nondeterministic).
func leaves(change string) bool {
	switch change {
	case diff.ChangeReverted, diff.ChangePartialRevert, diff.ChangeWithdrawn, diff.ChangeRetracted:
		return true
	}
	return false
}

// updateRepro renders the commands that show update u's own flips: for
// each target of its probes (mine), driftprobe diff over the runs around
// them (flips: flipRange; probes that left the event in u's run, flipped
// back, moved on or withdrawn: revertRange), then the event's
// evidence record, which holds every probe of the event, these included.
// A score drift has no flips (its verdicts held): only the record, which
// has the scores, is given.
func updateRepro(ev *diff.Event, u diff.EventUpdate, e *Evidence, mine []diff.EventProbe) string {
	var cmds []string
	if ev.Kind == diff.KindScoreDrift {
		mine = nil
	}
	for _, t := range probeTargets(mine) {
		var flips, back []diff.EventProbe
		for _, p := range probesOn(mine, t) {
			if p.RevertedRun == u.RunID {
				back = append(back, p)
			} else {
				flips = append(flips, p)
			}
		}
		if from, to, ok := flipRange(e, flips); ok {
			cmds = append(cmds, fmt.Sprintf("driftprobe diff --target %s --from %d --to %d", shellWord(t), from, to))
		}
		if from, to, ok := revertRange(back, u.RunID); ok {
			cmds = append(cmds, fmt.Sprintf("driftprobe diff --target %s --from %d --to %d", shellWord(t), from, to))
		}
	}
	cmds = append(cmds, fmt.Sprintf("driftprobe evidence %d --json > evidence-%d.json   # the hash-verifiable record of the event, these probes included", ev.ID, ev.ID))
	return "\n#### How to reproduce this update\n\nRun against the driftprobe database that filed this issue:\n\n" + fenced(strings.Join(cmds, "\n"), 10000)
}

// maxCats bounds the categories one line of a comment names.
const maxCats = 20

// catList renders categories as code spans (untrusted ones made inert),
// at most maxCats of them.
func catList(cs []string) string {
	var parts []string
	for i, c := range cs {
		if i == maxCats {
			parts = append(parts, fmt.Sprintf("and %d more", len(cs)-maxCats))
			break
		}
		parts = append(parts, code(truncRunes(c, 60)))
	}
	return strings.Join(parts, ", ")
}

// updateNews returns the categories update u brings to its event (ev, a
// policy or model change; mine: the probes u is about), which comments
// name first:
//
//   - onTarget: by target, the categories that never fired on it before
//     u's run and are blocked now by u's probes there: those that first
//     fired on the target in u's run, as e.FirstFired says; where it does
//     not know (no record of the target or the category), the event's new
//     categories that are new to the event as well.
//   - toEvent: the categories u's probes gained that no earlier probe of
//     the event had gained (confirmed in an earlier run, or by an update
//     recorded before u in its run; probes withdrawn as nondeterministic
//     by then do not count), onTarget's excepted: new to the event, not
//     to the target.
//   - unblocked: the categories u's probes lost that no earlier probe of
//     the event had gained or lost.
//
// Categories are "gained" and "lost" as in gainedLost. Updates that take
// probes out of the event bring nothing.
func updateNews(ev *diff.Event, u diff.EventUpdate, e *Evidence, mine []diff.EventProbe) (onTarget map[string][]string, toEvent, unblocked []string) {
	if (ev.Kind != diff.KindPolicy && ev.Kind != diff.KindModel) || len(mine) == 0 || leaves(u.Change) || u.Change == diff.ChangeOpened {
		return nil, nil, nil
	}
	type key struct{ target, probe string }
	in := map[key]bool{}
	for _, p := range mine {
		in[key{p.Target, p.ProbeID}] = true
	}
	// The probes of updates recorded before u in its run.
	var sameRun []func(diff.EventProbe) bool
	for _, o := range ev.Updates {
		if o.ID < u.ID && o.RunID == u.RunID && !leaves(o.Change) {
			o, t := o, updateTarget(ev, o)
			sameRun = append(sameRun, func(p diff.EventProbe) bool { return inUpdate(p, o, t) })
		}
	}
	hadGained, hadLost := map[string]bool{}, map[string]bool{}
	for _, p := range ev.Probes {
		if in[key{p.Target, p.ProbeID}] || (p.Withdrawn && p.RevertedRun <= u.RunID) {
			continue
		}
		earlier := p.ConfirmedRun < u.RunID
		for _, f := range sameRun {
			earlier = earlier || (p.ConfirmedRun == u.RunID && f(p))
		}
		if !earlier {
			continue
		}
		g, l := gainedLost(p)
		for _, c := range g {
			hadGained[c] = true
		}
		for _, c := range l {
			hadLost[c] = true
		}
	}
	isNew := map[string]bool{}
	for _, c := range ev.NewCategories {
		isNew[c] = true
	}
	var e2 Evidence
	if e != nil {
		e2 = *e
	}
	onTarget = map[string][]string{}
	newThere := map[string]bool{}
	var gained, lost []string
	for _, p := range mine {
		g, l := gainedLost(p)
		gained, lost = append(gained, g...), append(lost, l...)
		for _, c := range g {
			first, known := e2.FirstFired[p.Target][c]
			if ((known && first == u.RunID) || (!known && isNew[c] && !hadGained[c])) && !slices.Contains(onTarget[p.Target], c) {
				onTarget[p.Target] = append(onTarget[p.Target], c)
				newThere[c] = true
			}
		}
	}
	for t := range onTarget {
		sort.Strings(onTarget[t])
	}
	for _, c := range probes.SortedUnique(gained) {
		if !hadGained[c] && !newThere[c] {
			toEvent = append(toEvent, c)
		}
	}
	for _, c := range probes.SortedUnique(lost) {
		if !hadGained[c] && !hadLost[c] {
			unblocked = append(unblocked, c)
		}
	}
	return onTarget, toEvent, unblocked
}

// compositionNote renders what updateNews finds, prominently: the first
// thing a comment says after its heading.
func compositionNote(ev *diff.Event, u diff.EventUpdate, e *Evidence, mine []diff.EventProbe) string {
	onTarget, toEvent, unblocked := updateNews(ev, u, e, mine)
	var b strings.Builder
	targets := make([]string, 0, len(onTarget))
	for t := range onTarget {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range targets {
		what := "New category"
		if len(onTarget[t]) > 1 {
			what = "New categories"
		}
		fmt.Fprintf(&b, "**%s on %s, never fired on this target before run %d: %s.** A category that never fired on a target and now fires is the strongest signal of a provider change.\n\n",
			what, code(t), u.RunID, catList(onTarget[t]))
	}
	if len(toEvent) > 0 {
		where := "the targets of these probes"
		if ts := probeTargets(mine); len(ts) == 1 {
			where = code(ts[0])
		}
		it, they, are := "it", "It", "is"
		if len(toEvent) > 1 {
			it, they, are = "them", "They", "are"
		}
		fmt.Fprintf(&b, "**New to this event: %s.** This update's probes are the first of the event newly blocked for %s. %s fired on %s before this run, so %s not new to the target.\n\n",
			catList(toEvent), it, they, where, are)
	}
	if len(unblocked) > 0 {
		it := "it"
		if len(unblocked) > 1 {
			it = "them"
		}
		fmt.Fprintf(&b, "**No longer blocked, new to this event: %s.** This update's probes are the first of the event no longer blocked for %s.\n\n", catList(unblocked), it)
	}
	return b.String()
}

// updateTarget returns the target update u is about: u.Target, as the
// database records it. An update recorded before databases kept it names
// its target only in the detail: "target T changed the same way (…)"
// (target_joined), "N more probe(s) on T: …" (probes_added), "N probe(s)
// on T flipped back: …" or "N probe(s) on T moved on from …: …"
// (partially_reverted, reverted); target names hold
// no spaces or colons (config.validName). It returns "" when neither names
// one of the event's targets.
func updateTarget(ev *diff.Event, u diff.EventUpdate) string {
	if u.Target != "" && hasTarget(ev, u.Target) {
		return u.Target
	}
	var rest string
	var ok bool
	switch u.Change {
	case diff.ChangeTargetJoined:
		rest, ok = strings.CutPrefix(u.Detail, "target ")
	case diff.ChangeProbesAdded, diff.ChangePartialRevert, diff.ChangeReverted, diff.ChangeWithdrawn, diff.ChangeRetracted:
		_, rest, ok = strings.Cut(u.Detail, " on ")
	}
	if !ok {
		return ""
	}
	name := rest
	if i := strings.IndexAny(rest, " :"); i >= 0 {
		name = rest[:i]
	}
	if name == "" || !hasTarget(ev, name) {
		return ""
	}
	return name
}

// hasTarget reports whether name is one of ev's targets (or the target of
// one of its probes).
func hasTarget(ev *diff.Event, name string) bool {
	if name == ev.Target || slices.Contains(ev.Targets, name) {
		return true
	}
	return slices.ContainsFunc(ev.Probes, func(p diff.EventProbe) bool { return p.Target == name })
}

// inUpdate reports whether p is one of the probes update u is about: on
// target (any target when target is ""), left the event in u's run
// (flipped back, moved on or withdrawn) for a revert or a withdrawal,
// flipped (confirmed) in u's run for more probes or a joining target,
// either for any other change.
func inUpdate(p diff.EventProbe, u diff.EventUpdate, target string) bool {
	if target != "" && p.Target != target {
		return false
	}
	switch u.Change {
	case diff.ChangeReverted, diff.ChangePartialRevert, diff.ChangeWithdrawn, diff.ChangeRetracted:
		return p.RevertedRun == u.RunID
	case diff.ChangeProbesAdded, diff.ChangeTargetJoined:
		return p.ConfirmedRun == u.RunID
	}
	return p.ConfirmedRun == u.RunID || p.RevertedRun == u.RunID
}

// sortedUpdates returns ev's updates by id.
func sortedUpdates(ev *diff.Event) []diff.EventUpdate {
	us := append([]diff.EventUpdate(nil), ev.Updates...)
	sort.Slice(us, func(i, j int) bool { return us[i].ID < us[j].ID })
	return us
}

// retracted reports whether every probe of ev was withdrawn as
// nondeterministic: it ended without the provider reverting anything.
func retracted(ev *diff.Event) bool {
	for _, p := range ev.Probes {
		if !p.Withdrawn {
			return false
		}
	}
	return len(ev.Probes) > 0
}

// leftCounts returns how many of ps left their event, by how: flipped
// back to their before-verdict (back), moved on so that the event's
// change no longer holds for them without going back (movedOn), withdrawn
// as nondeterministic (withdrawn). Each probe counts once (a withdrawn
// probe is never counted as moved on); probes still in the event count in
// none.
func leftCounts(ps []diff.EventProbe) (back, movedOn, withdrawn int) {
	for _, p := range ps {
		switch {
		case p.Withdrawn:
			withdrawn++
		case p.MovedOn:
			movedOn++
		case p.Reverted:
			back++
		}
	}
	return back, movedOn, withdrawn
}

// pronoun is "it" for one probe, "them" for several.
func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// The headings of revert comments when probes moved on (updateTitle):
// those of an event's last revert, and of a partial one.
var (
	revertHeadings  = [...]string{"the change no longer holds: its probes moved on", "the change ended: probes flipped back or moved on"}
	partialHeadings = [...]string{"some probes moved on: the change no longer holds for them", "some probes flipped back or moved on"}
)

// updateTitle returns the heading of update u's comment (mine: the probes
// it is about). A revert's heading says how the probes left: the one
// ending the event by every probe of the event (it ended with them all
// out), a partial one by its own probes. "Reverted" is said only when
// none of them moved on: a probe that moved on reverted nothing.
func updateTitle(ev *diff.Event, u diff.EventUpdate, mine []diff.EventProbe) string {
	var ps []diff.EventProbe
	switch u.Change {
	case diff.ChangeReverted:
		ps = ev.Probes
	case diff.ChangePartialRevert:
		ps = mine
	}
	if back, moved, _ := leftCounts(ps); moved > 0 {
		switch {
		case u.Change == diff.ChangeReverted && back == 0:
			return revertHeadings[0]
		case u.Change == diff.ChangeReverted:
			return revertHeadings[1]
		case back == 0:
			return partialHeadings[0]
		default:
			return partialHeadings[1]
		}
	}
	if t := changeTitles[u.Change]; t != "" {
		return t
	}
	return inert(u.Change, 100)
}

// endedText says how an event every probe of which left it ended (status
// reverted, not retracted), true to how they left (leftCounts): "the
// provider reverted the change" only when none moved on. A probe that
// moved on left the event's after-verdict without coming back to its
// before-verdict (a later stage of a change then undone past it, a
// tightened probe now allowed beyond its before-verdict): the change as
// recorded has ended, but that probe shows no revert.
func endedText(ps []diff.EventProbe) string {
	back, moved, withdrawn := leftCounts(ps)
	switch {
	case moved == 0 && withdrawn > 0:
		return "Every flipped probe is back to its before-verdict on byte-identical requests, or was withdrawn as nondeterministic: the provider reverted the change."
	case moved == 0:
		return "Every flipped probe is back to its before-verdict on byte-identical requests: the provider reverted the change."
	}
	var parts []string
	if back > 0 {
		parts = append(parts, termtext.Count(back, "probe is back to its before-verdict", "probes are back to their before-verdicts"))
	}
	parts = append(parts, termtext.Count(moved, "probe moved on from its after-verdict without going back to its before-verdict",
		"probes moved on from their after-verdicts without going back to their before-verdicts"))
	if withdrawn > 0 {
		parts = append(parts, termtext.Count(withdrawn, "probe was withdrawn as nondeterministic", "probes were withdrawn as nondeterministic"))
	}
	list := parts[0]
	if len(parts) > 1 {
		list = strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	if back > 0 {
		return "Every flipped probe has left this event, not all by going back: on byte-identical requests, " + list +
			". The change as recorded no longer holds; only the probes back on their before-verdicts show the provider reverting it: " +
			"a verdict that moved on is a further change, not a return to the before-verdict."
	}
	return "Every flipped probe has left this event, none by going back: on byte-identical requests, " + list +
		". The change as recorded no longer holds, but no probe shows the provider reverting it: " +
		"a verdict that moved on is a further change, not a return to the before-verdict."
}
