#!/usr/bin/env bash
# Layers and heads are numbered alike everywhere, from 0: the attention command's --layer and --head,
# the titles of its SVG, and the web page's selectors (src/serve/assets/index.html, whose
# fillSelectors() runs here under Node.js on a fake document) label the same layer with the same number.
# Usage: attention_layers_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
source "$(dirname "$0")/level.sh"
skip_unsupported_level "$bin"
here=$(cd "$(dirname "$0")/.." && pwd)
fix="$here/fixtures/tiny_model"
page="$here/../src/serve/assets/index.html"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A random model of the tiny one's vocabulary with 3 decoder layers of 2 heads.
layers=3
last=$((layers - 1))
"$bin" init --preset tiny --vocab-size 120 --d-model 16 --heads 2 --d-ff 32 --encoder-layers 1 \
  --decoder-layers "$layers" --seed 1 -o "$work/model.safetensors" > /dev/null 2>&1 ||
  fail "init: $("$bin" init --preset tiny --vocab-size 120 --decoder-layers "$layers" -o "$work/model.safetensors" 2>&1)"

# The command: --layer N is titled "layer N"; without --layer, the last layer, titled by its index.
draw() { "$bin" attention -m "$work/model.safetensors" --vocab "$fix/vocab.model" "three hundred" -o "$work/a.svg" "$@"; }
for layer in 0 "$last"; do
  draw --layer "$layer" --head 1 > /dev/null 2>&1 || fail "attention --layer $layer: $(draw --layer "$layer" 2>&1)"
  grep -q ">layer $layer, head 1<" "$work/a.svg" ||
    fail "--layer $layer --head 1: title $(grep -o '>layer [^<]*<' "$work/a.svg")"
done
draw > /dev/null 2>&1
grep -q ">layer $last, average of " "$work/a.svg" || fail "default layer: title $(grep -o '>layer [^<]*<' "$work/a.svg")"
err=$(draw --layer "$layers" 2>&1) && fail "--layer $layers (one past the last) was accepted"
grep -q "layer $layers is outside \[0, $layers)" <<< "$err" || fail "--layer $layers: $err"
"$bin" attention --help | grep -q -- "--layer.*from 0" || fail "attention --help does not say layers count from 0"

# The page: the selectors' labels for a result of LAYERS layers and 2 heads, and the layer chosen first.
if ! command -v node > /dev/null; then
  echo "no node: the page's labels are not checked"
  exit 0
fi
sed -n '/^function fillSelectors() {/,/^}/p' "$page" > "$work/fill.js"
[ -s "$work/fill.js" ] || fail "no fillSelectors() in $page"
cat >> "$work/fill.js" <<EOF
const selects = {};
const select = () => ({ options: [], value: "", set innerHTML(_) { this.options = []; },
                        appendChild(o) { this.options.push(o); if (this.options.length === 1) this.value = o.value; } });
const \$ = (id) => (selects[id] = selects[id] || select());
const document = { createElement: () => ({}) };
const heads = [[[0]], [[0]]];  // 2 heads
const result = { hypotheses: [{ attention: Array.from({ length: $layers }, () => heads) }] };
fillSelectors();
const label = (id) => selects[id].options.find((o) => o.value === selects[id].value).textContent;
console.log(JSON.stringify({ layer: selects.layer.options.map((o) => o.textContent),
                             head: selects.head.options.map((o) => o.textContent), chosen: label("layer") }));
EOF
got=$(node "$work/fill.js")
want_layers=$(seq -s, 0 "$last" | sed 's/\([0-9]\+\)/"\1"/g')
want="{\"layer\":[\"mean\",$want_layers],\"head\":[\"mean\",\"0\",\"1\"],\"chosen\":\"$last\"}"
[ "$got" = "$want" ] || fail "the page's selectors: $got, wanted $want (the command's titles say layer $last)"
echo "ok: layers 0..$last and heads from 0 on the command line and the page"
