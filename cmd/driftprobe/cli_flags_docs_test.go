package main

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// docCommandRow is one row of a CLI table: the commands its first cell
// names and the flags it shows for them.
type docCommandRow struct {
	cell  string
	cmds  []*cobra.Command
	flags []string
}

var docFlagRE = regexp.MustCompile(`--[a-z][a-z0-9-]*`)

// docCommandRows reads the command table that starts at heading in doc:
// every row whose first cell begins with a backquote. Each row's commands
// are found by walking the first backquoted word(s) down root's tree (a
// `a\|b` word names several subcommands: `corpus lint\|lock\|list`).
func docCommandRows(t *testing.T, root *cobra.Command, name, doc, heading string) []docCommandRow {
	t.Helper()
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("%s: no %q", name, heading)
	}
	var rows []docCommandRow
	inTable := false
	for _, line := range strings.Split(doc[i:], "\n") {
		if !strings.HasPrefix(line, "| `") {
			if inTable && !strings.HasPrefix(line, "|") {
				break
			}
			continue
		}
		inTable = true
		// The first cell ends at the first " | " that is not an escaped \|.
		cell := line[2:]
		for j := 0; j+3 <= len(cell); j++ {
			if cell[j:j+3] == " | " && (j == 0 || cell[j-1] != '\\') {
				cell = cell[:j]
				break
			}
		}
		words := strings.Fields(strings.Trim(strings.SplitN(strings.TrimPrefix(cell, "`"), "`", 2)[0], " "))
		cmds := []*cobra.Command{root}
		for _, w := range words {
			if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") || strings.ToUpper(w) == w {
				break
			}
			var next []*cobra.Command
			for _, c := range cmds {
				for _, part := range strings.Split(w, `\|`) {
					for _, sub := range c.Commands() {
						if sub.Name() == part {
							next = append(next, sub)
						}
					}
				}
			}
			if len(next) == 0 {
				break // an argument (completion bash\|zsh…), not a subcommand
			}
			cmds = next
		}
		if len(cmds) == 1 && cmds[0] == root {
			t.Errorf("%s: row %q names no command of driftprobe", name, cell)
			continue
		}
		rows = append(rows, docCommandRow{cell: cell, cmds: cmds, flags: docFlagRE.FindAllString(cell, -1)})
	}
	if len(rows) < 15 {
		t.Fatalf("%s: only %d command rows found after %q", name, len(rows), heading)
	}
	return rows
}

// The command tables of docs/CLI.md and README.md show each command's
// flags: every flag they show exists on the command, and docs/CLI.md (the
// full contract) shows every flag a command has. A flag renamed, removed
// or added without a word in the docs fails here.
func TestCLIDocsFlagsMatchCommands(t *testing.T) {
	root := newRoot(&globals{})
	for _, d := range []struct {
		file, heading string
		complete      bool // every flag of the command is shown
	}{
		{"../../docs/CLI.md", "| command | what it does |", true},
		{"../../README.md", "## CLI reference", false},
	} {
		b, err := os.ReadFile(d.file)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(b)
		seen := map[string]bool{}
		for _, row := range docCommandRows(t, root, d.file, doc, d.heading) {
			for _, c := range row.cmds {
				seen[c.CommandPath()] = true
				for _, f := range row.flags {
					if c.Flags().Lookup(f[2:]) == nil && c.InheritedFlags().Lookup(f[2:]) == nil {
						t.Errorf("%s: `%s` shows %s, which the command does not have", d.file, c.CommandPath(), f)
					}
				}
				if !d.complete || strings.HasPrefix(c.CommandPath(), "driftprobe completion") {
					continue // cobra's own completion command
				}
				c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
					if f.Hidden || f.Name == "help" {
						return
					}
					if !strings.Contains(row.cell, "--"+f.Name) {
						t.Errorf("%s: `%s` has --%s, which its row does not show", d.file, c.CommandPath(), f.Name)
					}
				})
			}
		}
		// Every command is in the table.
		var missing []string
		var walk func(c *cobra.Command)
		walk = func(c *cobra.Command) {
			for _, sub := range c.Commands() {
				if sub.Hidden || sub.Name() == "help" {
					continue
				}
				if sub.Runnable() && !sub.HasSubCommands() && !seen[sub.CommandPath()] && !strings.HasPrefix(sub.CommandPath(), "driftprobe completion") {
					missing = append(missing, sub.CommandPath())
				}
				walk(sub)
			}
		}
		walk(root)
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s: commands without a row: %v", d.file, missing)
		}
		// The global flags line names every persistent flag.
		i := strings.Index(doc, "Global flags:")
		if i < 0 {
			t.Fatalf("%s: no \"Global flags:\"", d.file)
		}
		line, _, _ := strings.Cut(doc[i:], "\n")
		root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
			if !strings.Contains(line, "`--"+f.Name) {
				t.Errorf("%s: global flag --%s is not in %q", d.file, f.Name, line)
			}
		})
	}
}
