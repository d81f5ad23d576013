#!/usr/bin/env bash
# transformer import hf where it must not write: into a folder that holds a model already (refused,
# that model unchanged), and a write that fails part way into an existing empty folder (left empty);
# the input folder is never changed.
# Usage: hf_hostile_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
source "$(dirname "$0")/level.sh"
skip_unsupported_level "$bin"
here=$(cd "$(dirname "$0")/.." && pwd)
fix="$here/fixtures/hf"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
sums() { (cd "$1" && find . -type f -exec md5sum {} + | sort); }

input=$(sums "$fix/llama")
"$bin" import hf "$fix/llama" -o "$work/first" > /dev/null 2> "$work/err" || fail "import hf llama: $(cat "$work/err")"
first=$(sums "$work/first")
if "$bin" import hf "$fix/gpt2" -o "$work/first" > /dev/null 2> "$work/err"; then
  fail "an import into a folder that holds a model was allowed"
fi
grep -q "already holds a model" "$work/err" || fail "import into a model's folder: $(cat "$work/err")"
[ "$(sums "$work/first")" = "$first" ] || fail "a refused import changed the model already in the folder"

# Files capped at 40 KB: the vocabulary is written, the model (97 KB) is not.
mkdir "$work/empty"
rc=0
( trap '' XFSZ; ulimit -f 40; "$bin" import hf "$fix/llama" -o "$work/empty" ) > /dev/null 2> "$work/err" || rc=$?
[ "$rc" -ne 0 ] && grep -q "File too large" "$work/err" || fail "a capped write: status $rc, $(cat "$work/err")"
[ -z "$(ls -A "$work/empty")" ] || fail "a failed write left $(ls -A "$work/empty") in the folder it was given"
[ "$(sums "$fix/llama")" = "$input" ] || fail "the input folder was changed"
echo "hf_hostile_test: ok"
