#!/usr/bin/env bash
# Build the CUDA binaries on this (GPU-less) machine and pack them, with the
# shared libraries the GPU test machine's image lacks, into
# .devpack/devrun.tar.xz for tools/device_check.sh (carry `.devpack`).
#
#   tools/pack_device.sh [BUILD_DIR]     (default build-cudadev, sm_90)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$ROOT/build-cudadev}
cd "$ROOT"
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DDOTLM_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real >/dev/null
cmake --build "$B" -j "$(nproc)" --target dotlm test_gpu_ops test_gpu_gdn test_gpu_forward dotlm_gpu_bench ${EXTRA_TARGETS:-}
S=$(mktemp -d)
mkdir -p "$S/lib" .devpack
for t in dotlm test_gpu_ops test_gpu_gdn test_gpu_forward dotlm_gpu_bench ${EXTRA_TARGETS:-}; do
  f=$(find "$B" -maxdepth 2 -type f -name "$t" -perm -u+x | head -1)
  [ -n "$f" ] || { echo "pack_device: $t not built" >&2; exit 1; }
  cp "$f" "$S/" && strip "$S/$t"
done
# the non-system libraries the binaries need (not libc / libstdc++ / libm)
for t in "$S"/*; do
  [ -f "$t" ] || continue
  ldd "$t" | awk '/=> \//{print $3}' | grep -vE 'libc\.so|libm\.so|libstdc\+\+|libgcc_s|ld-linux|libpthread|libdl\.so|librt\.so|libz\.so' || true
done | sort -u | while read -r l; do cp -L "$l" "$S/lib/"; done
# -9e: the binaries share most of their bytes (the kernel images); a large
# dictionary packs six of them in about the size of one
XZ_OPT=-9e tar cJf .devpack/devrun.tar.xz -C "$S" .
rm -rf "$S"
ls -la .devpack/devrun.tar.xz
