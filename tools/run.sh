#!/usr/bin/env bash
# The two entry points of README's first section.
#   tools/run.sh main   set up, build, and certify the adapters that run anywhere
#   tools/run.sh test   set up, build, and run every test (plus the ASan/UBSan build)
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-}"
case "$mode" in
  main | test) ;;
  *)
    echo "usage: tools/run.sh main|test" >&2
    exit 2
    ;;
esac

# Each stage's start, for CI logs that show where the time went.
stage() { echo "== $1 (${SECONDS} s since start)"; }
stage setup
tools/setup/setup.sh
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-$PWD/build/pocl-cache}"
jobs="$(nproc)"
# The default build and `pip install .` compile the same sources with the
# same flags in two trees (build/, build/pip/<wheel tag>): through ccache the
# second reuses the first's objects. CMake takes the launcher from these
# variables when a tree is first configured; the sources and include paths
# are absolute, and NOHASHDIR leaves the tree's folder out of the hash (it
# only names the compile folder in the debug info). The cache stays in
# build/, so every run of a clean clone starts from the same state. ccache
# also hashes the compiler's name, and scikit-build-core would give the
# wheel's tree Python's (x86_64-linux-gnu-g++) where CMake finds c++: CC and
# CXX name the same compiler for both.
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
export CCACHE_DIR="$PWD/build/ccache" CCACHE_NOHASHDIR=1 CC=cc CXX=c++

stage "default build"
cmake --preset default >/dev/null
cmake --build --preset default -j "$jobs"

if [[ "$mode" == main ]]; then
  build/bin/polychip info
  status=0
  build/bin/polychip certify --suite precision --level quick \
    --adapters cpu,sim.faithful,opencl --out results/precision || status=$?
  build/bin/polychip certify --suite comm --level quick \
    --adapters cpu,sim.faithful,opencl --out results/comm || status=$?
  exit "$status"
fi

stage "default tests"
ctest --preset default -j "$jobs"
stage "blas tests again on generic kernels"
# Tests whose floating-point results depend on the BLAS kernel OpenBLAS picks
# for this CPU run once more on its generic SSE3 kernels (safe on every
# x86-64 CPU, another blocking and summation order), so a tolerance that
# holds for one summation order only fails here, on every machine. The
# certify cases that compute nothing with BLAS (the comm suite, crash and
# hang handling, killed runs) are not run twice, nor the defective sim
# profiles (89 s of one core: planted defects fail by far more than a
# summation order moves; the faithful ops' side is QuickPassesOnCpuAndSimFaithful).
OPENBLAS_CORETYPE=Prescott \
  GTEST_FILTER='-CertifyTest.Comm*:CertifyTest.CrashAndHang*:CertifyTest.Killed*:CertifyTest.DefectiveSimProfiles*' \
  ctest --preset default -j "$jobs" -L blas
stage "pip install"
# `pip install .` as docs/python.md tells a user, into two venvs: one that
# sees Debian's NumPy 1 (--system-site-packages), one that gets NumPy 2
# from PyPI. pip builds in its own tree, build/pip/<wheel tag>
# (pyproject.toml), only the wheel's targets, and leaves build/'s cache
# alone; the second install reuses that tree. Each venv (build/pip-venv/)
# then runs the Python tests on the installed package, from outside the
# source tree (Debian's torch, built for NumPy 1, only in the first).
root="$PWD"
cache_before="$(sha256sum build/CMakeCache.txt)"
for numpy in 1 2; do
  venv="$root/build/pip-venv/numpy-$numpy"
  if [[ "$numpy" == 1 ]]; then
    /usr/bin/python3 -m venv --system-site-packages --clear "$venv"
  else
    /usr/bin/python3 -m venv --clear "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check pytest
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check .
  (cd /tmp && "$venv/bin/python" - "$venv" "$numpy" <<'EOF'
import sys
import numpy
import polychip
venv, major = sys.argv[1], sys.argv[2]
assert numpy.__version__.split(".")[0] == major, f"NumPy {numpy.__version__}, not {major}.x"
for path in (polychip.__file__, polychip.suites.command()):
    assert path.startswith(venv + "/"), f"{path} is not in the installed package"
print(f"pip-installed polychip, NumPy {numpy.__version__}:", polychip.devices())
EOF
  )
  (cd /tmp && PYTHONDONTWRITEBYTECODE=1 POLYCHIP_TEST_WITHOUT_TORCH="$((numpy != 1))" \
    POLYCHIP_TEST_PATCH_LIBRARY="$root/build/lib/libcertify_crash_patch.so" \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests")
done
if [[ "$(sha256sum build/CMakeCache.txt)" != "$cache_before" ]]; then
  echo "pip install . changed build/CMakeCache.txt" >&2
  exit 1
fi
built="$(ls build/pip/*/bin)"
if [[ "$built" != polychip ]]; then
  echo "pip install . built more programs than the wheel's polychip:" $built >&2
  exit 1
fi
stage "sanitizer build"
# Its flags (and gcc, named by the preset) are its own: nothing to share.
unset CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER
cmake --preset sanitize >/dev/null
cmake --build --preset sanitize -j "$jobs"
stage "sanitizer tests"
# intercept_tls_get_addr=0: GCC 12's LeakSanitizer guesses the bounds of a
# dlopen'ed library's TLS block from a glibc 2.19 header it looks for when the
# block starts 16 bytes into a page, and scanned from address 0x1cb8 (SIGSEGV in
# its tracer: "Tracer caught signal 11") when a block landed there by chance
# (PoCL's cached kernels, once libfabric was no longer loaded at start-up).
# glibc 2.36 allocates those blocks with malloc and points at them from the
# thread's DTV, so the leak check still sees every one without the guess.
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0" \
  LSAN_OPTIONS="suppressions=$PWD/tools/setup/lsan.supp" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  ctest --preset sanitize -j "$jobs" -LE no_sanitize
