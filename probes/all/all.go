// Package all links every provider package into a binary.
package all

import (
	_ "github.com/driftprobe/driftprobe/probes/sim" // registers "sim"
)
