#!/usr/bin/env bash
# CI part for the GPU backend (no GPU here): build and link the CUDA backend
# with nvcc and the HIP backend with hipcc (gfx906), then the opcode gate on
# the NVIDIA PTX, the SASS of the CUDA dotlm (cuobjdump from PyPI) and the
# AMD gfx906 code objects (hipcc from Debian). Fails on any build error or
# gate violation.
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
# the bench refuses what it does not know (exit 2) instead of ignoring it
if ./build-cuda-ci/dotlm_gpu_bench --no-such-flag >/dev/null 2>&1; [ $? -ne 2 ]; then
  echo "ci_gpu: dotlm_gpu_bench did not refuse an unknown argument with exit status 2" >&2
  exit 1
fi
echo "-- HIP backend: compile + link (gfx906, -Werror as every build)"
cmake -S . -B build-hip-ci -DDOTLM_HIP=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-hip-ci -j "$(nproc)" --target dotlm test_gpu_ops test_gpu_gdn test_gpu_gemv_multi dotlm_gpu_bench
./build-hip-ci/test_gpu_ops | tail -n 1   # no GPU here: must skip cleanly
./build-hip-ci/test_gpu_gemv_multi | tail -n 1
# The SASS of the built binary too: this toolkit has no disassembler, but
# NVIDIA publishes cuobjdump and the nvdisasm it calls for --dump-sass on
# PyPI (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm; a newer pair reads
# older cubins). Without network the gate runs on the PTX and gfx906 code
# only, and says so.
SASS_ARGS=()
if command -v cuobjdump >/dev/null 2>&1 && command -v nvdisasm >/dev/null 2>&1; then
  SASS_ARGS=(--sass build-cuda-ci/dotlm)
else
  d=build-cuda-ci/nvtools-pypi
  if [ ! -x "$d/bin/cuobjdump" ] || [ ! -x "$d/bin/nvdisasm" ]; then
    rm -rf "$d" && mkdir -p "$d/whl" "$d/bin"
    for t in cuobjdump nvdisasm; do
      python3 -m pip download -q --no-deps --index-url https://pypi.org/simple "nvidia-cuda-$t>=13.2" \
        -d "$d/whl" 2>>"$d/pip.log" || break
    done
    for w in "$d"/whl/*.whl; do [ -f "$w" ] && { python3 -m zipfile -e "$w" "$d/x" || true; }; done
    for t in cuobjdump nvdisasm; do
      f=$(find "$d/x" -type f -name "$t" 2>/dev/null | head -1 || true)
      [ -n "$f" ] && cp "$f" "$d/bin/$t" && chmod +x "$d/bin/$t"
    done
  fi
  if [ -x "$d/bin/cuobjdump" ] && [ -x "$d/bin/nvdisasm" ]; then
    export PATH=$PWD/$d/bin:$PATH
    SASS_ARGS=(--sass build-cuda-ci/dotlm)
  else
    echo "ci_gpu: cuobjdump / nvdisasm could not be fetched from PyPI ($(tail -n 1 "$d/pip.log" 2>/dev/null)):" \
         "the SASS part of the gate is SKIPPED, the PTX and gfx906 parts run" >&2
  fi
fi
echo "-- opcode gate (PTX + gfx906${SASS_ARGS:+ + SASS of build-cuda-ci/dotlm})"
tools/gpu_gate.sh --require-hip "${SASS_ARGS[@]}"
