#!/usr/bin/env bash
# Runs every response-parser fuzz target (FuzzClassify) for a short time,
# package by package (go test accepts -fuzz for one package at a time).
#
#   scripts/fuzz-short.sh              # 5s per package
#   FUZZTIME=2m scripts/fuzz-short.sh  # longer, locally
#
# A failing input is written under probes/<pkg>/testdata/fuzz/FuzzClassify/;
# commit it once fixed so plain `go test` replays it.
set -euo pipefail

FUZZTIME="${FUZZTIME:-5s}"
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
