#!/usr/bin/env bash
# CI part for the GPU backend (no GPU here): build and link the CUDA backend
# with nvcc and the HIP backend with hipcc (gfx906), then the opcode gate on
# the NVIDIA PTX and the AMD gfx906 code objects (hipcc from Debian). Fails
# on any build error or gate violation.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
if ! command -v nvcc >/dev/null 2>&1; then
  echo "ci_gpu: nvcc not found; the CUDA toolkit is part of this machine kind" >&2
  exit 1
fi
if ! command -v hipcc >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get install -y -qq hipcc >/dev/null
fi
echo "-- CUDA backend: compile + link (sm_90)"
cmake -S . -B build-cuda-ci -DDOTLM_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90-real >/dev/null
cmake --build build-cuda-ci -j "$(nproc)" --target dotlm test_gpu_ops test_gpu_gdn dotlm_gpu_bench
./build-cuda-ci/test_gpu_ops | tail -n 1   # no GPU here: must skip cleanly
./build-cuda-ci/test_gpu_gdn | tail -n 1
echo "-- HIP backend: compile + link (gfx906, -Werror as every build)"
cmake -S . -B build-hip-ci -DDOTLM_HIP=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-hip-ci -j "$(nproc)" --target dotlm test_gpu_ops test_gpu_gdn test_gpu_gemv_multi dotlm_gpu_bench
./build-hip-ci/test_gpu_ops | tail -n 1   # no GPU here: must skip cleanly
./build-hip-ci/test_gpu_gemv_multi | tail -n 1
echo "-- opcode gate (PTX + gfx906)"
tools/gpu_gate.sh --require-hip
