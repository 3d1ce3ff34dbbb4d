// Package all links every provider package into a binary.
package all

import (
	_ "github.com/driftprobe/driftprobe/probes/anthropic" // registers "anthropic"
	_ "github.com/driftprobe/driftprobe/probes/gemini"    // registers "gemini"
	_ "github.com/driftprobe/driftprobe/probes/sim"       // registers "sim"
)
