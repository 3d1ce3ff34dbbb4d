#!/usr/bin/env bash
# Runs every response-parser fuzz target (FuzzClassify) and the fuzzers of
# other untrusted input for a short time, one at a time (go test accepts
# -fuzz for one package and one target at a time).
#
#   scripts/fuzz-short.sh              # 2000 executions per target
#   FUZZTIME=2m scripts/fuzz-short.sh  # longer, locally
#
# CI uses an execution count: with a duration, the Go fuzz coordinator can
# fail a clean run with "context deadline exceeded" when the deadline races
# its worker context (seen in CI on ./probes/sim).
#
# A failing input is written under probes/<pkg>/testdata/fuzz/FuzzClassify/;
# commit it once fixed so plain `go test` replays it.
set -euo pipefail

FUZZTIME="${FUZZTIME:-2000x}"
cd "$(dirname "$0")/.."

pkgs=(
	./probes/oaiwire
	./probes/openai
	./probes/azure
	./probes/openaicompat
	./probes/mistral
	./probes/anthropic
	./probes/gemini
	./probes/bedrock
	./probes/sim
)

for pkg in "${pkgs[@]}"; do
	echo "== fuzz ${pkg} (${FUZZTIME})"
	go test -run '^$' -fuzz '^FuzzClassify$' -fuzztime "${FUZZTIME}" "${pkg}"
done

# Other untrusted input: stored bodies and signals read back, production
# JSONL files, keys echoed in provider bodies (redaction).
others=(
	"./storage FuzzBody"
	"./storage FuzzDecodeSignals"
	"./attribution FuzzReadJSONL"
	"./probes/wire FuzzRedactBytes"
)
for o in "${others[@]}"; do
	read -r pkg fz <<<"${o}"
	echo "== fuzz ${pkg} ${fz} (${FUZZTIME})"
	go test -run '^$' -fuzz "^${fz}\$" -fuzztime "${FUZZTIME}" "${pkg}"
done
