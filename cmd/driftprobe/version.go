package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/internal/app"
)

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(g.stdout, "driftprobe %s (%s, %s/%s)\n", app.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
