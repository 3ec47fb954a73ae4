#!/usr/bin/env bash
# Installs every Debian package polychip's build, tests and benchmarks need.
# Idempotent: quiet and fast when everything is already there.
# Usage: tools/setup/setup.sh   (the peers benchmarks compare against included: PyTorch, Open MPI)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ccache
  clang-14 clang-format-14 libclang-rt-14-dev llvm-spirv-14
  libgtest-dev libgmock-dev libbenchmark-dev
  libfmt-dev nlohmann-json3-dev libcli11-dev
  libopenblas-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  libze-dev libze1
  hipcc libamdhip64-dev
  libfabric-dev libfabric-bin rdma-core libibverbs-dev libssl-dev
  openmpi-bin libopenmpi-dev
  pybind11-dev python3-dev python3-numpy python3-jsonschema python3-pytest libdlpack-dev
  python3-venv python3-pip python3-torch
  iproute2 procps
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
