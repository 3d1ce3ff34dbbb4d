package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/yamlx"
	"github.com/driftprobe/driftprobe/probes/sim"
)

func newSimCmd(g *globals) *cobra.Command {
	listen, file := "127.0.0.1:8089", ""
	c := &cobra.Command{
		Use:   "sim",
		Short: "Run the provider simulator as a standalone HTTP server",
		Long: `Serve the embedded provider simulator: POST /v1/chat/completions (and Azure's
/openai/deployments/NAME/chat/completions) in the OpenAI wire format with Azure's
content-filter dialect. Point a target at it with provider: sim and base_url.
--sim-config takes a YAML file holding a sim block (noise, policies, ...).
The run id used for scripted policies comes from the X-Driftprobe-Run header.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg sim.Config
			if file != "" {
				data, err := os.ReadFile(file)
				if err != nil {
					return app.Usage(err)
				}
				if _, err := yamlx.Decode(file, data, &cfg); err != nil {
					return err
				}
				if errs := cfg.Validate(); len(errs) > 0 {
					return app.Usage(fmt.Errorf("%s: %s: %s", file, errs[0][0], errs[0][1]))
				}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return app.Usage(fmt.Errorf("--listen %s: %w", listen, err))
			}
			srv := &http.Server{Handler: sim.NewServer(cfg), ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(g.stderr, "driftprobe sim listening on http://%s\n", ln.Addr())
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case <-cmd.Context().Done():
				return srv.Close()
			case err := <-errc:
				if errors.Is(err, http.ErrServerClosed) {
					return nil
				}
				return err
			}
		},
	}
	c.Flags().StringVar(&listen, "listen", listen, "address to listen on")
	c.Flags().StringVar(&file, "sim-config", "", "YAML file with a sim block")
	return c
}
