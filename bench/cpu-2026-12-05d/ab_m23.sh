#!/usr/bin/env bash
# W8A8 at M = 2, 3: the AVX-512 VNNI tiles (default where qmm_i8_tiles_at
# says so) against the per-row AVX-VNNI dot with spread-out rows (the VNNI-512
# tiles switched off, as before 2026-12-05), interleaved, two rounds, GB/s of
# weight bytes, 1 and 2 threads, over K = 896 .. 4864.
cd "$(dirname "$0")/../.."
D=${D:-./build/dotlm}
for round in 1 2; do
  for shp in 4096x4096 896x4864 4864x896 4096x2048 4096x1536 8960x1536; do
    for s in tiles rowdot; do
      E=; [ $s = rowdot ] && E=cpu.qmm.int8.avx512vnni
      for t in 1 2; do
        echo "round $round $shp $s t=$t: $(DOTLM_DISABLE=$E $D bench --shape $shp -t $t --reps 20 --gemv-m 2,3,2,3 2>&1 | grep -E '^int8' | cut -c1-70)"
      done
    done
  done
done
