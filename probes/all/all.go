// Package all links every provider package into a binary.
package all

import (
	_ "github.com/driftprobe/driftprobe/probes/anthropic"    // registers "anthropic"
	_ "github.com/driftprobe/driftprobe/probes/azure"        // registers "azure"
	_ "github.com/driftprobe/driftprobe/probes/bedrock"      // registers "bedrock"
	_ "github.com/driftprobe/driftprobe/probes/gemini"       // registers "gemini"
	_ "github.com/driftprobe/driftprobe/probes/mistral"      // registers "mistral"
	_ "github.com/driftprobe/driftprobe/probes/openai"       // registers "openai"
	_ "github.com/driftprobe/driftprobe/probes/openaicompat" // registers "openai_compatible"
	_ "github.com/driftprobe/driftprobe/probes/sim"          // registers "sim"
)
