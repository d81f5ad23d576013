#!/usr/bin/env bash
# The installed library as another project uses it (examples/cpp): `cmake --install` into a fresh
# prefix, then find_package(Transformer) builds the example against the shared and the static
# library, and it translates the tiny model as the command line does. The shared library's consumer
# configures and builds with the CUDA toolkit, MPI, OpenMP and oneDNN hidden (it needs none of them);
# the static one asks for what the installed build links, and says what is missing. The same program
# builds through pkg-config (transformer.pc). Also: only the public headers are installed, each
# compiles alone as C++17 without the project's dependencies, and their comments name no internal
# type or file; no compile option of the project reaches the example's compile commands.
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
config=$(ls "$prefix"/lib*/cmake/Transformer/TransformerConfig.cmake)
ls "$prefix"/lib*/pkgconfig/transformer.pc > /dev/null || fail "no transformer.pc"
# The optional parts the installed build has, as the package states them.
has_cuda=$(sed -n 's/^set(Transformer_HAS_CUDA \(ON\|OFF\))$/\1/p' "$config")
has_mpi=$(sed -n 's/^set(Transformer_HAS_MPI \(ON\|OFF\))$/\1/p' "$config")
[ -n "$has_cuda" ] && [ -n "$has_mpi" ] || fail "the package config states no Transformer_HAS_CUDA or _MPI: $(cat "$config")"
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
# A public header speaks to its users: its comments name no internal namespace or source file.
grep -n -E 'tfm::|src/|[a-z_]+\.cc\b' "$prefix"/include/transformer/*.h &&
  fail "a public header's comments name internal types or files (above)"

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
sanitize_flags=()
[ -z "$sanitize" ] || with_sanitizers=(-DCMAKE_CXX_FLAGS="$sanitize" -DCMAKE_EXE_LINKER_FLAGS="$sanitize")
[ -z "$sanitize" ] || read -r -a sanitize_flags <<< "$sanitize"

# Hidden from the shared library's consumer: it must need none of them.
hidden=(-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON
        -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON -DCMAKE_DISABLE_FIND_PACKAGE_dnnl=ON)
model=$src/tests/fixtures/tiny_model
for mode in shared static; do
  static=OFF
  without=("${hidden[@]}")
  [ $mode = static ] && static=ON && without=()
  ex=$work/example-$mode
  cmake -S "$src/examples/cpp" -B "$ex" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DLINK_STATIC=$static \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "${with_sanitizers[@]}" "${without[@]}" > "$work/configure.log" 2>&1 ||
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

# The static library with the CUDA toolkit and MPI hidden: found where the installed build links
# neither, else a configure error naming what is missing and the shared library as the way out.
rc=0
cmake -S "$src/examples/cpp" -B "$work/example-static-hidden" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DLINK_STATIC=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON > "$work/configure.log" 2>&1 || rc=$?
if [ "$has_cuda" = OFF ] && [ "$has_mpi" = OFF ]; then
  [ $rc = 0 ] || fail "static, CUDA and MPI hidden, neither in the build: configure: $(cat "$work/configure.log")"
else
  [ $rc != 0 ] || fail "static: configured with the CUDA toolkit and MPI hidden, which the installed build links"
  message=$(tr -s ' \n' '  ' < "$work/configure.log")  # CMake wraps the message
  grep -q "link Transformer::transformer (the shared library), which needs none of them" <<< "$message" ||
    fail "static, hidden: $(cat "$work/configure.log")"
  [ "$has_cuda" = OFF ] || grep -q "not found: .*CUDAToolkit" <<< "$message" || fail "static: CUDA not named: $message"
  [ "$has_mpi" = OFF ] || grep -q "not found: .*MPI" <<< "$message" || fail "static: MPI not named: $message"
fi

# pkg-config: the shared library from `pkg-config --cflags --libs transformer`.
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$(ls "$prefix"/lib*/pkgconfig/transformer.pc)")
[ "$(pkg-config --modversion transformer)" = "$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' \
  "$(dirname "$config")/TransformerConfigVersion.cmake")" ] || fail "pkg-config: version $(pkg-config --modversion transformer)"
# shellcheck disable=SC2046  # pkg-config's flags are words
g++ -std=c++17 "${sanitize_flags[@]}" -o "$work/translate-pc" "$src/examples/cpp/translate.cpp" \
  $(pkg-config --cflags --libs transformer) 2> "$work/build.log" || fail "pkg-config: build: $(cat "$work/build.log")"
LD_LIBRARY_PATH=$(pkg-config --variable=libdir transformer) "$work/translate-pc" "$model/model.safetensors" 4 \
  < "$model/input.en" > "$work/out.pc" 2> "$work/err" || fail "pkg-config: translate: $(cat "$work/err")"
cut -f1 "$work/out.pc" | diff - "$model/expected.beam4.de" > "$work/diff" ||
  fail "pkg-config: translations differ from the committed ones: $(cat "$work/diff")"
# The static library with Libs.private (docs/api.md's command).
# shellcheck disable=SC2046
g++ -std=c++17 "${sanitize_flags[@]}" -o "$work/translate-pc-static" "$src/examples/cpp/translate.cpp" \
  $(pkg-config --cflags transformer) -Wl,-Bstatic -ltransformer -Wl,-Bdynamic -Wl,--as-needed \
  $(pkg-config --static --libs transformer) 2> "$work/build.log" || fail "pkg-config --static: build: $(cat "$work/build.log")"
ldd "$work/translate-pc-static" | grep -q "libtransformer.so" && fail "pkg-config --static: linked to libtransformer.so"
"$work/translate-pc-static" "$model/model.safetensors" 4 < "$model/input.en" | cut -f1 |
  diff - "$model/expected.beam4.de" > "$work/diff" || fail "pkg-config --static: translations differ: $(cat "$work/diff")"
echo "install test: OK"
