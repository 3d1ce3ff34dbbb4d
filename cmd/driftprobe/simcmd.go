package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/internal/problems"
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
--sim-config takes a YAML file holding a sim block (noise, policies, ...):
either the block's fields at the top level, or a document whose only key is
sim: (the block as a target's sim: writes it, e.g. cut from a config).
The run id used for scripted policies comes from the X-Driftprobe-Run header.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg sim.Config
			if file != "" {
				c, err := loadSimConfig(file)
				if err != nil {
					return err
				}
				cfg = *c
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return app.Usage(fmt.Errorf("--listen %s: %w", listen, err))
			}
			srv := sim.HTTPServer(sim.NewServer(cfg))
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
	c.Flags().StringVar(&file, "sim-config", "", "YAML file with a sim block (its fields at the top level, or under a single sim: key)")
	return c
}

// loadSimConfig reads a --sim-config file: a sim block's fields at the top
// level, or a document with a single top-level sim: key holding them.
// Problems are reported as FILE:LINE: FIELD: problem, every one of the
// file at once: an unknown field or a value of the wrong type hides none
// of the values validation refuses.
func loadSimConfig(file string) (*sim.Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		// As a config that cannot be read: FILE: what, then why.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, app.Usage(fmt.Errorf("%s: cannot read sim config: %w", file, err))
	}
	var probe yaml.Node
	wrapped := false
	if yaml.Unmarshal(data, &probe) == nil && len(probe.Content) == 1 && probe.Content[0].Kind == yaml.MappingNode {
		for i := 0; i+1 < len(probe.Content[0].Content); i += 2 {
			// sim.Config has no field named sim: the key marks the
			// wrapped form (strict decoding refuses any other top key).
			if probe.Content[0].Content[i].Value == "sim" {
				wrapped = true
			}
		}
	}
	cfg, prefix := &sim.Config{}, ""
	var root *yaml.Node
	if wrapped {
		var doc struct {
			Sim *sim.Config `yaml:"sim"`
		}
		root, err = yamlx.Decode(file, data, &doc)
		if doc.Sim != nil {
			cfg = doc.Sim
		}
		prefix = "sim."
	} else {
		root, err = yamlx.Decode(file, data, cfg)
	}
	decoded, ok := problems.Readable(err)
	if !ok {
		return nil, err
	}
	if len(decoded) > 0 {
		// The decoder drops a policy it cannot read, and every later
		// policy's problems would name the one before: read each again
		// at its own index (the file is refused either way).
		// An empty entry stays zero: ValidateSim says so.
		if l, ok := problems.Items[sim.Policy](root, prefix+"policies"); ok {
			cfg.Policies = l
		}
	}
	col := &yamlx.Collector{File: file, Root: root}
	config.ValidateSim(col, prefix, cfg)
	if l := problems.Combine(root, decoded, col.List, nil); len(l) > 0 {
		return nil, problems.Cap(l)
	}
	return cfg, nil
}
