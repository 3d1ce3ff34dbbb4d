#!/usr/bin/env bash
# Fails when the repository tracks a build output: a compiled executable
# (ELF, Mach-O, PE) or any file over 1 MiB. A 15 MB binary once slipped
# into the first commit unnoticed. Outside a git work tree there is
# nothing to check.
set -euo pipefail
cd "$(dirname "$0")/.."
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || exit 0

limit=$((1 << 20))
bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue # deleted in the work tree
  size=$(wc -c <"$f" | tr -d " ")
  if [ "$size" -gt "$limit" ]; then
    echo "check-tree: $f is $size bytes (over 1 MiB): a build output or data that belongs elsewhere" >&2
    bad=1
    continue
  fi
  magic=$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
  7f454c46 | cffaedfe | cefaedfe | feedfacf | feedface | 4d5a*)
    echo "check-tree: $f is a compiled executable (magic $magic): build outputs are not committed" >&2
    bad=1
    ;;
  esac
done < <(git ls-files -z)
exit "$bad"
