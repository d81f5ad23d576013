# Cross-compiling for aarch64 Linux on a Debian 12 x86-64 machine (make test-arm64, docs/arm64.md):
#
#   scripts/install-deps.sh --arm64
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DTFM_NATIVE=OFF
#
# Compilers: Debian's crossbuild-essential-arm64. Libraries: Debian's arm64 multiarch packages, in
# the host's /usr/lib/aarch64-linux-gnu, plus the three that cannot be installed beside their amd64
# versions (SentencePiece, oneDNN's -dev, yaml-cpp), which install-deps.sh unpacks into ARM64_SYSROOT
# (/opt/arm64-sysroot). Test programs, including gtest_discover_tests' listing at build time, run
# under qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR), named explicitly: no binfmt_misc needed.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)  # find_* look in lib/aarch64-linux-gnu, never x86_64's
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(DEFINED ENV{ARM64_SYSROOT})
  set(TFM_ARM64_SYSROOT "$ENV{ARM64_SYSROOT}")
else()
  set(TFM_ARM64_SYSROOT /opt/arm64-sysroot)
endif()

# The unpacked packages first, then the cross toolchain's own root, then (BOTH) the host's root,
# where Debian keeps the arm64 multiarch libraries. Programs (pkg-config, python3, qemu) are the host's.
set(CMAKE_FIND_ROOT_PATH ${TFM_ARM64_SYSROOT} /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config (OpenBLAS, SentencePiece) reads only arm64 .pc files; the host's x86-64 ones are never seen.
set(ENV{PKG_CONFIG_LIBDIR}
    "${TFM_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# -march=native means the build machine's x86-64 CPU: never when cross-compiling (option() keeps this).
set(TFM_NATIVE OFF CACHE BOOL "Compile for the build machine's CPU only (-march=native)")

# qemu-aarch64 runs the test programs, with the arm64 dynamic loader /lib/ld-linux-aarch64.so.1 of
# Debian's multiarch libc6:arm64 (installed with the arm64 libraries); it finds the multiarch
# libraries through the host's /etc/ld.so.cache and the others through RUNPATH (ARM64_SYSROOT).
# Not `qemu-aarch64 -L /usr/aarch64-linux-gnu`: that takes the loader from the cross toolchain's
# libc6-arm64-cross (2.36-8cross1) while libc.so.6 still resolves, through ld.so.cache, to
# libc6:arm64 (2.36-9+deb12u…); two builds of glibc disagree on the loader's private data, and the
# first pthread_create (std::thread, OpenMP, SentencePiece's trainer) spins forever.
find_program(TFM_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static
             DOC "qemu user-mode emulator for aarch64 (Debian: qemu-user)")
if(NOT TFM_QEMU_AARCH64)
  message(FATAL_ERROR "qemu-aarch64 not found: run scripts/install-deps.sh --arm64")
endif()
if(NOT EXISTS /lib/ld-linux-aarch64.so.1)
  message(FATAL_ERROR "/lib/ld-linux-aarch64.so.1 not found (libc6:arm64): run scripts/install-deps.sh --arm64")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${TFM_QEMU_AARCH64})
