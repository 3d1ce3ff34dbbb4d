package attribution

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/driftprobe/driftprobe/internal/termtext"
)

// Clean makes untrusted text safe for a terminal (termtext.Clean):
// control and format characters (including bidirectional overrides and
// line breaks) and invalid UTF-8 are escaped (\n, \x1b, \u202e), and
// text beyond 300 runes is cut.
func Clean(s string) string { return termtext.Clean(s) }

// Safe makes text that may already hold Clean's escapes (an error message
// built from Clean'd parts, as stored with a failed attribution) safe for a
// terminal without escaping it twice (termtext.Safe).
func Safe(s string) string { return termtext.Safe(s) }

// WriteTable prints r for humans. Every string from outside the config is
// escaped with Clean; reasons, which attribution writes and which are long
// by design, are printed whole with their control characters escaped
// (termtext.SafeLong).
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "attribute · %d series · %d change(s)", r.Series, len(r.Changes))
	counts := map[string]int{}
	for _, c := range r.Changes {
		counts[c.Attribution]++
	}
	if len(r.Changes) > 0 {
		fmt.Fprintf(w, ": %d provider, %d traffic, %d inconclusive", counts[Provider], counts[Traffic], counts[Inconclusive])
	}
	fmt.Fprintln(w)
	if len(r.Changes) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TARGET\tCATEGORY\tCHANGE_AT\tBEFORE\tAFTER\tDIR\tZ\tATTRIBUTION\tEVENTS\tRUNS_BEFORE/AFTER\t")
		for _, c := range r.Changes {
			z := "-"
			if c.Z != nil {
				z = strconv.FormatFloat(*c.Z, 'f', 1, 64)
			}
			ev := "-"
			if len(c.Events) > 0 {
				ids := make([]string, len(c.Events))
				for i, id := range c.Events {
					ids[i] = strconv.FormatInt(id, 10)
				}
				ev = strings.Join(ids, ",")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t\n", Clean(c.Target), Clean(catShort(c.Category)), c.ChangeAt.UTC().Format(time.RFC3339),
				rate(c.BeforeRate, c.RateUnit), rate(c.AfterRate, c.RateUnit), c.Direction, z, strings.ToUpper(c.Attribution), ev, c.RunsBefore, c.RunsAfter)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		for _, c := range r.Changes {
			// Reasons are long by design (events, windows, gaps): printed
			// whole, control characters escaped.
			fmt.Fprintf(w, "%s/%s %s: %s\n", Clean(c.Target), Clean(catShort(c.Category)), strings.ToUpper(c.Attribution), termtext.SafeLong(c.Reason))
		}
	}
	if len(r.Uncovered) > 0 {
		fmt.Fprintf(w, "\nuncovered categories (production blocks them, no corpus probe is tagged with them):\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  TARGET\tCATEGORY\tBLOCKED\t")
		for _, u := range r.Uncovered {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t\n", Clean(u.Target), Clean(u.Category), fmtCount(u.Blocked))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "\nskipped series: %d\n", len(r.Skipped))
		for _, s := range r.Skipped {
			fmt.Fprintf(w, "  %s %s: %s\n", s.Query, labelString(s.Labels), Clean(s.Reason))
		}
	}
	return nil
}

// WriteWarnings prints the report's warnings and skipped series, one per
// line, escaped: what belongs on stderr. Warnings are printed whole;
// skipped series, which quote label values of any length, are cut as
// Clean cuts them.
func (r *Report) WriteWarnings(w io.Writer) {
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "driftprobe: warning: skipped %s series %s: %s\n", s.Query, labelString(s.Labels), Clean(s.Reason))
	}
	for _, m := range r.Warnings {
		// Warnings are attribution's sentences, bounded where they quote
		// the server (a query, a Prometheus warning): printed whole, as
		// a hint cut at 300 runes loses its advice.
		fmt.Fprintf(w, "driftprobe: warning: %s\n", termtext.CleanLong(m))
	}
}

// labelString renders labels as {k="v", ...}, sorted and escaped.
func labelString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = Clean(k) + `="` + strings.ReplaceAll(Clean(l[k]), `"`, `\"`) + `"`
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func catShort(c string) string {
	if c == "" {
		return "(all)"
	}
	return c
}

func rate(v float64, unit string) string {
	if unit == "share" {
		return strconv.FormatFloat(100*v, 'f', 2, 64) + "%"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "/int"
}
