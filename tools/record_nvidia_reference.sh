#!/bin/bash
# On a machine with an NVIDIA GPU, with a build that has the CUDA kernels
# (POLYCHIP_BUILD_CUDA=ON, the default where nvcc is found): runs the cuda
# adapter through the suites and records the NVIDIA reference this
# repository ships — the precision suite's outputs (standard level) and the
# default workload's training traces, fp32 and bf16. About 2 minutes on an
# H200. Usage: tools/record_nvidia_reference.sh OUT_DIR [POLYCHIP_BINARY]
#   then: tools/trim_nvidia_trace.py OUT_DIR/trace_standard.json \
#           conformance/data/nvidia_<gpu>_standard.json --max-bytes 16384 --keep-op gemm
set -u
out=${1:?usage: $0 OUT_DIR [POLYCHIP_BINARY]}
polychip=${2:-$(dirname "$0")/../build/bin/polychip}
device=${POLYCHIP_NVIDIA_DEVICE:-cuda:0}
mkdir -p "$out" || exit 2
status=0
step() {
  echo "== $*"
  "$@" || { echo "== exit $?"; status=1; }
}
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
step "$polychip" info
step "$polychip" certify --suite precision --adapters "$device" --level standard --no-progress \
  --out "$out/certify-standard" --record-nvidia-trace "$out/trace_standard.json"
for precision in fp32 bf16; do
  step "$polychip" train -a "$device" --precision $precision --steps 100 \
    --out "$out/run-$precision" --record-reference "$out/gpt2_default_${precision}_recorded.json"
done
step "$polychip" certify --suite comm --adapters "${device%%:*},cpu" --no-progress \
  --out "$out/certify-comm"
step "$polychip" certify --suite training --adapters "$device" --no-progress \
  --out "$out/certify-training"
exit $status
