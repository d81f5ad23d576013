#!/usr/bin/env bash
# `transformer serve` under load on loopback (docs/performance.md): MODEL translates SOURCE offline
# (`translate`, beam 4, the reference output and throughput), then the server is run twice:
#   1. 64 clients (CLIENTS), each sending single sentences for SECONDS s: every answer is checked
#      against the offline translation of its own sentence; throughput against offline's;
#   2. overload: 256 clients (OVERLOAD_CLIENTS) against a queue of 64 sentences (OVERLOAD_QUEUE):
#      the answers must be 200s and 503s only, and the server's memory is watched.
#
#   scripts/serve_load.sh MODEL SOURCE [SECONDS]
# Environment: BIN (build/transformer), LOAD (build/bench/serve_load), THREADS (all cores), and
# SERVE_FLAGS, extra flags for both servers.
set -euo pipefail
model=${1:?usage: serve_load.sh MODEL SOURCE [SECONDS]}
src=${2:?source sentences, one per line}
seconds=${3:-60}
bin=${BIN:-build/transformer}
load=${LOAD:-build/bench/serve_load}
threads=${THREADS:-$(nproc)}
clients=${CLIENTS:-64}
overload_clients=${OVERLOAD_CLIENTS:-256}
overload_queue=${OVERLOAD_QUEUE:-64}
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

lscpu | sed -n 's/^Model name: *//p' | head -1
echo "model $model, $(wc -l < "$src") sentences of $src, beam 4, $threads threads"

"$bin" translate -m "$model" --beam 4 --threads "$threads" --stats --input "$src" > "$work/offline.hyp" 2> "$work/offline.log"
# "translated N sentences, M tokens in S s: R tokens/s"
read -r n secs < <(sed -n 's/translated \([0-9]*\) sentences, [0-9]* tokens in \([0-9.]*\) s.*/\1 \2/p' "$work/offline.log")
offline=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.1f", n / s }')
echo "offline translate: $n sentences in $secs s: $offline sentences/s"

# Starts the server with the given flags; sets pid and port.
serve() {
  # shellcheck disable=SC2086
  "$bin" serve -m "$model" --port 0 ${SERVE_FLAGS:-} "$@" 2> "$work/serve.log" &
  pid=$!
  for _ in $(seq 600); do
    port=$(sed -n 's/.*on http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$work/serve.log")
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$work/serve.log" >&2; exit 1; }
  sed -n 's/^serving /  serving /p' "$work/serve.log"
}
stop() {
  local peak code=0
  peak=$(awk '/VmHWM/ { print $2 / 1024 }' "/proc/$pid/status")
  kill -TERM "$pid"
  wait "$pid" || code=$?
  echo "  server peak memory (VmHWM): ${peak} MiB; exit status after SIGTERM: $code"
  pid=
}

echo "== $clients clients, ${seconds} s"
serve
status=0
"$load" --port "$port" --source "$src" --expected "$work/offline.hyp" --clients "$clients" --seconds "$seconds" \
  > "$work/load.json" || status=$?
cat "$work/load.json"
stop
rate=$(sed -n 's/.*"sentences_per_second":\([0-9.e+]*\).*/\1/p' "$work/load.json")
awk -v r="$rate" -v o="$offline" 'BEGIN { printf "  served / offline throughput: %.1f / %.1f = %.2f\n", r, o, r / o }'

echo "== overload: $overload_clients clients, a queue of $overload_queue sentences, ${seconds} s"
serve --queue-size "$overload_queue" --max-sentences 1
"$load" --port "$port" --source "$src" --expected "$work/offline.hyp" --clients "$overload_clients" \
  --seconds "$seconds" > "$work/overload.json" || status=$?
cat "$work/overload.json"
stop
exit "$status"
