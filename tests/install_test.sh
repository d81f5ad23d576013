#!/usr/bin/env bash
# The installed library as another project uses it (examples/cpp): `cmake --install` into a fresh
# prefix, then find_package(Transformer) builds the example against the shared and the static
# library, and it translates the tiny model as the command line does. Also: only the public headers
# are installed, each compiles alone as C++17 without the project's dependencies, and no compile
# option of the project reaches the example's compile commands.
# usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log" || fail "cmake --install: $(cat "$work/install.log")"
for f in include/transformer/translator.h bin/transformer; do
  [ -e "$prefix/$f" ] || fail "$f was not installed"
done
ls "$prefix"/lib*/libtransformer.a "$prefix"/lib*/libtransformer.so > /dev/null || fail "no libtransformer.a and .so"
ls "$prefix"/lib*/cmake/Transformer/TransformerConfig.cmake > /dev/null || fail "no package config"
others=$(find "$prefix/include" -type f ! -path "$prefix/include/transformer/*")
[ -z "$others" ] || fail "headers outside include/transformer: $others"

# Each public header alone, C++17, nothing but the standard library on the include path.
for h in "$prefix"/include/transformer/*.h; do
  name=$(basename "$h")
  echo "#include <transformer/$name>" | g++ -std=c++17 -fsyntax-only -Wall -Wextra -I "$prefix/include" -x c++ - \
    2> "$work/header.log" || fail "transformer/$name does not compile alone: $(cat "$work/header.log")"
done
grep -l -E '#include ["<](nlohmann|CLI|core/|ops/|model/|decode/|data/)' "$prefix"/include/transformer/*.h &&
  fail "a public header includes a dependency or an internal header"

# docs/api.md shows the examples: each block after "<!-- example: PATH -->" must be that file.
examples=$(sed -n 's/^<!-- example: \(.*\) -->$/\1/p' "$src/docs/api.md")
[ -n "$examples" ] || fail "docs/api.md shows no example"
for path in $examples; do
  awk -v marker="<!-- example: $path -->" '$0 == marker { getline; on = 1; next } on && /^```$/ { exit } on' \
    "$src/docs/api.md" > "$work/doc-example"
  diff "$work/doc-example" "$src/$path" > "$work/diff" || fail "docs/api.md's copy of $path differs: $(cat "$work/diff")"
done

# A library built with sanitizers (make test-sanitize) needs a program built and linked with them too
# (their runtime first among its libraries), as any program using that library would.
sanitize=$(sed -n 's/^CMAKE_CXX_FLAGS:STRING=//p' "$build/CMakeCache.txt" | grep -o -e '-fsanitize=[^ ]*' | tr '\n' ' ' || true)
with_sanitizers=()
[ -z "$sanitize" ] || with_sanitizers=(-DCMAKE_CXX_FLAGS="$sanitize" -DCMAKE_EXE_LINKER_FLAGS="$sanitize")

model=$src/tests/fixtures/tiny_model
for mode in shared static; do
  static=OFF
  [ $mode = static ] && static=ON
  ex=$work/example-$mode
  cmake -S "$src/examples/cpp" -B "$ex" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DLINK_STATIC=$static \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "${with_sanitizers[@]}" > "$work/configure.log" 2>&1 ||
    fail "$mode: configure: $(cat "$work/configure.log")"
  cmake --build "$ex" > "$work/build.log" 2>&1 || fail "$mode: build: $(cat "$work/build.log")"
  # The project's own options (warnings, -march, OpenMP, its src/ folder) stay with it.
  if grep -E -e '-march|-fopenmp|-Wall|/src"?( |$)|-I[^ ]*/src ' "$ex/compile_commands.json"; then
    fail "$mode: a compile option of the project reached the example"
  fi
  "$ex/translate" "$model/model.safetensors" 4 < "$model/input.en" > "$work/out.$mode" 2> "$work/err" ||
    fail "$mode: translate: $(cat "$work/err")"
  cut -f1 "$work/out.$mode" | diff - "$model/expected.beam4.de" > "$work/diff" ||
    fail "$mode: translations differ from the committed ones: $(cat "$work/diff")"
  [ ! -s "$work/err" ] || fail "$mode: the library wrote to stderr: $(cat "$work/err")"
  ldd "$ex/translate" > "$work/ldd"
  if [ $mode = shared ]; then
    grep -q "libtransformer.so" "$work/ldd" || fail "shared: not linked to libtransformer.so: $(cat "$work/ldd")"
  else
    grep -q "libtransformer.so" "$work/ldd" && fail "static: linked to libtransformer.so"
  fi
  "$ex/nbest" "$model/model.safetensors" "three hundred forty-two" > "$work/nbest" 2> "$work/err" ||
    fail "$mode: nbest: $(cat "$work/err")"
  [ "$(grep -c . "$work/nbest")" = 3 ] || fail "$mode: nbest printed: $(cat "$work/nbest")"
  # The teacher-forced score of the best translation is the search's score of it.
  awk -F'\t' 'NR == 1 { s = $2 } /^teacher-forced/ { d = s - $2; if (d < -1e-3 || d > 1e-3) exit 1 }' "$work/nbest" ||
    fail "$mode: the search's and the teacher-forced scores differ: $(cat "$work/nbest")"
  "$ex/translate" /nonexistent.safetensors < /dev/null 2> "$work/err" && fail "$mode: a missing model was accepted"
  grep -q "/nonexistent.safetensors" "$work/err" || fail "$mode: the error does not name the file: $(cat "$work/err")"
done
echo "install test: OK"
