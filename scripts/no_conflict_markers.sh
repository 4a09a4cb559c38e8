#!/usr/bin/env bash
# Fail when a merge-conflict marker is committed or staged anywhere in the tree (make lint, make test).
set -euo pipefail
cd "$(dirname "$0")/.."
if git grep -nE '^(<<<<<<<( |$)|>>>>>>>( |$)|=======$)' -- . ; then
  echo "FAIL: merge-conflict markers (above); resolve them" >&2
  exit 1
fi
