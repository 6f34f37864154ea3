#!/usr/bin/env bash
# session 41 call 4 (the last 200 s of device time): fp8 decode of Qwen3-14B
# shapes with xpf=2 (default) against xpf=1, whose GEMV alone meets the fp8
# M = 1 target on the H100. Run as one command line, not through the
# prelude (no logs kept; the output is run4/output.txt).
mkdir -p /tmp/r && tar xJf .devpack/devrun.tar.xz -C /tmp/r && export LD_LIBRARY_PATH=/tmp/r/lib && timeout 100 python3 tools/make_bench_model.py /dev/shm/m14 --preset qwen3-14b --format fp8-block > /tmp/gen.log 2>&1; cp assets/tokenizers/qwen3/* /dev/shm/m14/; tail -1 /tmp/gen.log; for r in 1 2; do for x in 2 1; do echo -n "xpf=$x "; DOTLM_GEMV=xpf=$x timeout 30 /tmp/r/dotlm bench --model /dev/shm/m14 --backend cuda --prompt-len 512 --gen 64 2>&1 | grep -E '^decode'; done; done; nvidia-smi --query-gpu=name --format=csv,noheader
