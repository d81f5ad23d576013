#!/usr/bin/env bash
# Two "machines" on one: two network namespaces joined by a veth pair, each with its own address and
# host name, and one rank in each; mpirun starts the second rank through a launcher agent that enters
# the other namespace (where a cluster would use ssh), and the ranks talk over TCP only. The model
# must be byte-identical to one process accumulating the same 2 batches per step.
# Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN, for `ip netns` and `unshare --uts`); skipped (77)
# where the machine refuses.
# Usage: mpi_hosts_test.sh PATH/TO/transformer PATH/TO/mpiexec
set -euo pipefail
bin=$(realpath "$1")
mpiexec=$2
work=$(mktemp -d)
tag=$$
ns_a=tfm-a-$tag ns_b=tfm-b-$tag
cleanup() {
  ip link del va-$tag 2>/dev/null || true  # when a check failed before it moved into its namespace
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! ip netns add "$ns_a" 2>/dev/null || ! ip netns add "$ns_b" 2>/dev/null ||
  ! ip link add va-$tag type veth peer name vb-$tag 2>/dev/null || ! unshare --uts true 2>/dev/null; then
  echo "skipped: this machine does not allow network namespaces, veth pairs or UTS namespaces here"
  exit 77
fi
ip link set va-$tag netns "$ns_a"
ip link set vb-$tag netns "$ns_b"
ip -n "$ns_a" addr add 10.77.0.1/24 dev va-$tag
ip -n "$ns_b" addr add 10.77.0.2/24 dev vb-$tag
for ns in "$ns_a" "$ns_b"; do
  ip -n "$ns" link set lo up
done
ip -n "$ns_a" link set va-$tag up
ip -n "$ns_b" link set vb-$tag up
# (no ping here: the training run below is the connectivity test)

# mpirun's remote launcher, in place of ssh: AGENT HOST COMMAND... runs COMMAND in HOST's namespace,
# under HOST's own host name.
cat > "$work/agent" <<AGENT
#!/bin/sh
case "\$1" in
  10.77.0.1) ns=$ns_a name=tfm-host-a ;;
  10.77.0.2) ns=$ns_b name=tfm-host-b ;;
  *) echo "agent: unknown host \$1" >&2; exit 1 ;;
esac
shift
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$name; \$*"
AGENT
chmod +x "$work/agent"

"$bin" demo-data --out "$work/data" --train 300 --valid 20 --test 20 --seed 3 >/dev/null
common=(--train-source "$work/data/train.en" --train-target "$work/data/train.de"
        --preset tiny --d-model 16 --heads 2 --d-ff 32 --layers 1 --vocab-size 80 --batch-tokens 256
        --warmup-steps 10 --save-every 10 --log-every 10 --threads 1 --seed 5 --max-steps 30)
"$bin" train "${common[@]}" --accumulate 2 --run-dir "$work/one" >/dev/null 2>"$work/one.log" ||
  { cat "$work/one.log"; fail "1 process"; }

# mpirun on "host a"; rank 0 there, rank 1 on "host b"; TCP over the veth pair only.
status=0
ip netns exec "$ns_a" unshare --uts sh -c 'hostname tfm-host-a; exec "$@"' sh \
  timeout 200 "$mpiexec" --allow-run-as-root --host 10.77.0.1:1,10.77.0.2:1 -np 2 \
  --mca plm_rsh_agent "$work/agent" --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 \
  --mca oob_tcp_if_include 10.77.0.0/24 --mca hwloc_base_binding_policy none \
  -x PATH \
  sh -c 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)" >&2; exec "$@"' sh \
  "$bin" train "${common[@]}" --run-dir "$work/two" >/dev/null 2>"$work/two.log" || status=$?
[ "$status" -eq 0 ] || { cat "$work/two.log"; fail "2 hosts: status $status"; }
grep -q "rank 0 on tfm-host-a" "$work/two.log" && grep -q "rank 1 on tfm-host-b" "$work/two.log" ||
  fail "the ranks did not run on the two hosts: $(grep '^rank' "$work/two.log")"
cmp "$work/one/model.safetensors" "$work/two/model.safetensors" || fail "2 hosts differ from 1 process"
echo "ok: 2 hosts over TCP give the model of 1 process"
