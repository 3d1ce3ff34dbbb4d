package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/probes"
)

func newProvidersCmd(g *globals) *cobra.Command {
	asJSON := false
	c := &cobra.Command{
		Use:   "providers",
		Short: "List providers and the wire signals each one reads",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps := probes.Providers()
			if asJSON {
				return writeJSON(g.stdout, ps)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PROVIDER\tENDPOINTS\tKEY\tINPUT\tOUTPUT\tSCORES\tREQUEST ID\tMODEL FINGERPRINT")
			for _, p := range ps {
				key := p.KeyEnv
				if key == "" && len(p.CredentialEnv) > 0 {
					// bedrock: the AWS variables (SigV4), as the README's table says.
					key = strings.Join(p.CredentialEnv, "/")
				}
				if !p.NeedsKey && key == "" {
					key = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, strings.Join(p.Endpoints, ","), key, yn(p.Input), yn(p.Output), yn(p.Scores), p.RequestID, p.ModelFP)
			}
			tw.Flush()
			fmt.Fprintln(g.stdout)
			for _, p := range ps {
				fmt.Fprintf(g.stdout, "%s reads:\n", p.Name)
				for _, s := range p.Signals {
					fmt.Fprintf(g.stdout, "  - %s\n", s)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "JSON output")
	return c
}

func yn(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
