package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/corpus"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/termtext"
)

func newCorpusCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "corpus",
		Short: "Lint, lock and list probe corpora",
		Long: `A corpus is a directory with corpus.yaml (name, version, probes) and corpus.lock
(version -> content hash). DIR defaults to the config's corpus, else the embedded
default corpus.`,
	}
	var asJSON bool
	load := func(args []string, lock bool) (*corpus.Corpus, error) {
		dir := ""
		if len(args) > 0 {
			dir = args[0]
		}
		if dir == "" && g.config != "" {
			cfg, err := app.LoadConfig(g.config, g.db, false)
			if err != nil {
				return nil, err
			}
			// The config's corpus: a problem with its directory is
			// located at the config's corpus line (FILE:LINE:), as run,
			// plan and config check say it.
			return app.LoadCorpus(cfg, "", lock)
		}
		return app.LoadCorpus(nil, dir, lock)
	}
	lint := &cobra.Command{
		Use:   "lint [DIR]",
		Short: "Check a corpus: schema, ids, prompts, tags, and that its bytes match its locked version (warns about probes sending the same messages, and ids differing only in case)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cp, err := load(args, false)
			if err != nil {
				if asJSON {
					// CI parsing the JSON gets the verdict and the problems
					// too (the message still goes to stderr, the exit code
					// is the same).
					if werr := writeJSON(g.stdout, map[string]any{"ok": false, "errors": strings.Split(err.Error(), "\n")}); werr != nil {
						return errors.Join(err, werr)
					}
				}
				return err
			}
			// Every role is a key, 0 when unused: the JSON's shape does not
			// depend on the corpus.
			roles := map[string]int{corpus.RoleBenign: 0, corpus.RoleBorderline: 0, corpus.RolePositive: 0}
			for _, p := range cp.Probes {
				roles[p.Role]++
			}
			warnings := cp.Warnings()
			if asJSON {
				return writeJSON(g.stdout, map[string]any{"name": cp.Name, "version": cp.Version, "sha256": cp.Hash, "probes": len(cp.Probes), "categories": append([]string{}, cp.Categories()...), "roles": roles, "ok": true,
					"warnings": append([]string{}, warnings...)})
			}
			for _, w := range warnings {
				fmt.Fprintf(g.stderr, "driftprobe: warning: %s\n", w)
			}
			fmt.Fprintf(g.stdout, "corpus %s %s: ok, %s (%s, %d borderline, %s), %s, sha256 %s\n",
				cp.Name, cp.Version, termtext.Count(len(cp.Probes), "probe", "probes"), termtext.Count(roles[corpus.RoleBenign], "benign control", "benign controls"),
				roles[corpus.RoleBorderline], termtext.Count(roles[corpus.RolePositive], "positive control", "positive controls"),
				termtext.Count(len(cp.Categories()), "category", "categories"), cp.Hash)
			return nil
		},
	}
	lock := &cobra.Command{
		Use:   "lock [DIR]",
		Short: "Record the corpus version's content hash in corpus.lock",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cp, err := load(args, false)
			if err != nil {
				return err
			}
			embedded := cp.Dir == ""
			if !embedded {
				if err := corpus.WriteLock(cp); err != nil {
					return app.Usage(err)
				}
			}
			switch {
			case asJSON:
				return writeJSON(g.stdout, map[string]any{"name": cp.Name, "version": cp.Version, "sha256": cp.Hash, "locked": true, "embedded": embedded})
			case embedded:
				fmt.Fprintf(g.stdout, "embedded corpus %s %s is locked at build time (sha256 %s)\n", cp.Name, cp.Version, cp.Hash)
			default:
				fmt.Fprintf(g.stdout, "locked %s %s -> %s\n", cp.Name, cp.Version, cp.Hash)
			}
			return nil
		},
	}
	list := &cobra.Command{
		Use:   "list [DIR]",
		Short: "List probes with their canonical SHA-256, tags, role and expect",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cp, err := load(args, false)
			if err != nil {
				return err
			}
			if asJSON {
				type item struct {
					ID     string   `json:"id"`
					SHA256 string   `json:"sha256"`
					Tags   []string `json:"tags"`
					Role   string   `json:"role"`
					Expect string   `json:"expect"`
				}
				items := make([]item, 0, len(cp.Probes))
				for _, p := range cp.Probes {
					tags := p.Tags
					if tags == nil {
						tags = []string{}
					}
					items = append(items, item{p.ID, p.SHA256, tags, p.Role, p.Expect})
				}
				return writeJSON(g.stdout, items)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSHA256\tTAGS\tROLE\tEXPECT")
			for _, p := range cp.Probes {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.ID, p.SHA256[:16], strings.Join(p.Tags, ","), p.Role, p.Expect)
			}
			return tw.Flush()
		},
	}
	for _, s := range []*cobra.Command{lint, lock, list} {
		s.Flags().BoolVar(&asJSON, "json", false, "JSON output")
		c.AddCommand(s)
	}
	return c
}
