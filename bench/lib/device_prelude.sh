# Shared setup for the scripts that run on the GPU test machine
# (bench/<session>/runN.sh, through the device `run` verb with
# `carry [".devpack/devrun.tar.xz"]`, pack made by tools/pack_device.sh).
# Source it from the repository root:
#
#   . bench/lib/device_prelude.sh
#   dv_only_on H200              # optional: end here on any other card
#   dv_init                      # $OUT/$L, the GPU's name ($DV_GPU), unpack into $B
#   dv_models fp8-block int8     # Qwen3-8B-shaped models in /dev/shm (background)
#   dv_models --preset qwen3-14b int8   # /dev/shm/m_int8_14b
#   dv_gate                      # SASS opcode gate on $B/dotlm (background)
#   dv_test NAME                 # one GPU unit test of the pack, one line
#   dv_tests                     # every GPU unit test + fixtures on cuda
#   dv_forward_lines             # test_gpu_forward's failures, 16-SM line
#   dv_models_wait
#   dv_decode int8 --prompt-len 512 --gen 64
#   dv_decode_rounds "14b " 2 fp8-block_14b int8_14b   # 2 rounds at 512, then 4096
#   dv_gemv_sms "default;default,fp8=hf" all 96   # M = 1 GEMVs on all / 96 SMs
#   DOTLM_GEMV=default,occ=6 dv_gb occ6; dv_gb_table occ6   # M = 1 GEMVs, one setting
#   dv_gb_caps 6 7               # M = 1 GEMVs with no cap, caps 6 and 7; the table
#   dv_occ_rounds "14b " _14b    # decode with and without the caps, 2 rounds
#   dv_copy_bw                   # the copy bandwidth alone (one line)
#   dv_serve_loadgen fp8 /dev/shm/m_fp8-block --concurrency 1,4 --duration 4
#   dv_pack                      # tars $L into $OUT/logs.tgz now
#   dv_finish                    # waits, tars $L into $OUT/logs.tgz
#   dv_h200_then bench/<s>/run2.sh   # or: on an H200 go on with that script
#
# Every function writes its full output under $L and echoes one summary line,
# so the call's output tail is a short table.
#
# Size: a call carries the tracked tree (~49 MB on 2026-12-06), the
# untracked files git does not ignore, and the pack (~22 MB), and refuses
# more than 64 MiB. Leave the older bench logs out for the call's duration:
#   tools/device_trim.sh on      # all but the 3 newest bench/h200-* entries
#   ... the device call ...
#   tools/device_trim.sh off     # before any commit

set -u
OUT=${OUT:-/tmp/out}
L=/tmp/dv_l # logs travel back only inside $OUT/logs.tgz (the file count is limited)
B=/tmp/r
DV_T0=$(date +%s)

# The GPU's name as nvidia-smi gives it (or nvidia-smi's error).
dv_gpu_name() { nvidia-smi --query-gpu=name --format=csv,noheader 2>&1; }

# dv_only_on NAME: ends the script (status 0, one line) unless the GPU's
# name contains NAME (e.g. H200), so a call that got another card stops
# before unpacking anything.
dv_only_on() {
    local g
    g=$(dv_gpu_name)
    case "$g" in
    *"$1"*) ;;
    *) echo "not an $1: $g"; exit 0 ;;
    esac
}

# Seconds since dv_init, as "t=Ns".
dv_t() { echo "t=$(($(date +%s) - DV_T0))s"; }

# Log dir, the GPU's name and UUID ($L/gpu.txt; the name also in DV_GPU),
# the pack unpacked into $B.
dv_init() {
    mkdir -p "$L" "$B"
    DV_GPU=$(dv_gpu_name)
    nvidia-smi --query-gpu=name,uuid --format=csv >"$L/gpu.txt" 2>&1
    if [ -f .devpack/devrun.tar.xz ]; then
        tar xJf .devpack/devrun.tar.xz -C "$B"
    else
        echo "dv_init: no .devpack/devrun.tar.xz (carry it; tools/pack_device.sh makes it)"
    fi
    export LD_LIBRARY_PATH=$B/lib
}

# dv_models [--preset P] FORMAT...: random checkpoints with the shapes of
# preset P (tools/make_bench_model.py; default qwen3-8b) and the Qwen3
# tokenizer, made one after another in the background, in
# /dev/shm/m_FORMAT for qwen3-8b and /dev/shm/m_FORMAT_S for qwen3-S
# (e.g. --preset qwen3-14b int8 -> /dev/shm/m_int8_14b); logs gen_<name>.log.
dv_models() {
    local preset=qwen3-8b sfx=
    if [ "${1:-}" = --preset ]; then
        preset=$2
        shift 2
        [ "$preset" = qwen3-8b ] || sfx=_${preset#qwen3-}
    fi
    (for f in "$@"; do
        timeout 250 python3 tools/make_bench_model.py "/dev/shm/m_$f$sfx" --preset "$preset" --format "$f" \
            >"$L/gen_$f$sfx.log" 2>&1
        cp assets/tokenizers/qwen3/* "/dev/shm/m_$f$sfx/" && touch "/dev/shm/m_$f$sfx/.ready"
    done) &
    DV_MODELS_PIDS="${DV_MODELS_PIDS:-} $!"
}
# dv_model_ready NAME: waits (at most 300 s) until /dev/shm/m_NAME is complete,
# so a script can use one model while dv_models still makes the others.
dv_model_ready() {
    local t=0
    while [ ! -f "/dev/shm/m_$1/.ready" ] && [ $t -lt 300 ]; do
        sleep 2
        t=$((t + 2))
    done
}
# Waits for every dv_models call so far.
dv_models_wait() {
    local p
    for p in ${DV_MODELS_PIDS:-}; do wait "$p" 2>/dev/null || true; done
    DV_MODELS_PIDS=
}

# The SASS opcode gate on the packed dotlm, in the background ($L/gate.log).
dv_gate() {
    (timeout 280 tools/gpu_gate.sh --no-ptx --no-hip --sass "$B/dotlm" >"$L/gate.log" 2>&1
        echo "gate rc=$?" >>"$L/gate.log") &
}

# dv_test NAME: one GPU unit test of the pack (log $L/NAME.log), one line.
dv_test() {
    [ -x "$B/$1" ] || { echo "$1: not in the pack"; return; }
    timeout 200 "$B/$1" >"$L/$1.log" 2>&1
    echo "$1 rc=$? $(tail -1 "$L/$1.log")"
}

# After test_gpu_forward ran (dv_test or dv_tests): its first failures and
# the line of its 16-SM partition pass (the occ rule by bandwidth per SM).
dv_forward_lines() { grep -m3 -E "FAIL|^DOTLM_GPU_SMS=16" "$L/test_gpu_forward.log"; }

# The GPU unit tests and the fixtures on --backend cuda, one line each.
dv_tests() {
    local t
    for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward test_gpu_gdn; do
        dv_test "$t"
    done
    DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py >"$L/fixtures.log" 2>&1
    echo "fixtures rc=$? $(tail -1 "$L/fixtures.log")"
}

# dv_decode FORMAT [dotlm bench args...]: one decode benchmark of /dev/shm/m_FORMAT
# on cuda (default --prompt-len 512 --gen 64); environment from the caller.
# Its log also holds the kernel dispatch counters (--stats), so a knob's
# launches can be read off every decode after the call.
dv_decode() {
    local f=$1 log
    shift
    [ $# -gt 0 ] || set -- --prompt-len 512 --gen 64
    log=$L/dec_$f.$(date +%s%N).log
    timeout 90 "$B/dotlm" bench --model "/dev/shm/m_$f" --backend cuda "$@" --stats >"$log" 2>&1
    echo "decode $f ${DOTLM_GPU_SMS:+sms=$DOTLM_GPU_SMS }${DOTLM_GEMV:+DOTLM_GEMV=$DOTLM_GEMV }${DOTLM_GPU_DIAG_SKIP:+skip=$DOTLM_GPU_DIAG_SKIP }${DOTLM_GPU_ATTN_ROW:+row=$DOTLM_GPU_ATTN_ROW }$*: $(grep -hE '^decode' "$log" | tail -1)"
}

# dv_decode_rounds LABEL N MODEL...: N interleaved rounds of dv_decode on each
# /dev/shm/m_MODEL at its default (512 positions, 64 tokens), then each once
# after 4096 positions (32 tokens); every line starts with LABEL.
dv_decode_rounds() {
    local label=$1 n=$2 r f
    shift 2
    for r in $(seq "$n"); do
        for f in "$@"; do echo -n "$label"; dv_decode "$f"; done
    done
    for f in "$@"; do echo -n "$label"; dv_decode "$f" --prompt-len 4096 --gen 32; done
}

# dv_gemv_sms VARIANTS SMS...: dotlm_gpu_bench's M = 1 GEMVs (x's twin, the
# ';'-separated GEMV specs VARIANTS) once per SM count ("all" or N, as
# DOTLM_GPU_SMS=N), into $L/gb_<SMS>.log, one line each; then
# `python3 bench/lib/sms_table.py $L` tables them.
dv_gemv_sms() {
    local vars=$1 sms v
    shift
    for sms in "$@"; do
        v=$sms
        [ "$sms" = all ] && v=
        DOTLM_GPU_SMS=$v DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="$vars" \
            timeout 150 "$B/dotlm_gpu_bench" --no-sweep --quick >"$L/gb_$sms.log" 2>&1
        echo "gpu_bench sms=$sms rc=$? $(grep -m1 'copy D2D' "$L/gb_$sms.log" | tr -s ' ') |" \
            "$(grep -m1 'SMs in use' "$L/gb_$sms.log" | tr -s ' ')"
    done
}

# dv_gb LABEL: dotlm_gpu_bench's GEMVs at M = 1 (x's twin; DOTLM_GEMV and
# the rest of the environment from the caller) into $L/gb_LABEL.log, one
# line; dv_gb_table LABEL...: their fp8 and W8A8 rows, kernel (early
# chain) / late / plain / graph columns, % of the copy bandwidth.
dv_gb() {
    DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 timeout 150 "$B/dotlm_gpu_bench" --no-sweep --quick >"$L/gb_$1.log" 2>&1
    echo "gb $1 rc=$? $(grep -m1 'copy D2D' "$L/gb_$1.log" | tr -s ' ')"
}
# dv_gb_caps CAP...: dv_gb with no cap (occ=0,i8occ=0: dflt; before the
# fifty-third session that was the default everywhere, now the fp8 cap is
# 6 by default on an H200), then with each cap on both M = 1 GEMVs
# (occ=CAP,i8occ=CAP: occCAP), then dv_gb_table of them all.
dv_gb_caps() {
    local c names=dflt
    DOTLM_GEMV=default,occ=0,i8occ=0 dv_gb dflt
    for c in "$@"; do
        DOTLM_GEMV=default,occ=$c,i8occ=$c dv_gb "occ$c"
        names="$names occ$c"
    done
    dv_gb_table $names
}
# dv_occ_rounds LABEL SUFFIX: two interleaved rounds of dv_decode at its
# default on /dev/shm/m_fp8-blockSUFFIX and m_int8SUFFIX, each with no cap
# (occ=0 / i8occ=0 named: the fp8 default is 6 on an H200) and with a cap
# of 6 (occ=6 for fp8, i8occ=6 for W8A8); every line starts with LABEL.
dv_occ_rounds() {
    local label=$1 sfx=$2 r
    for r in 1 2; do
        echo -n "$label"; DOTLM_GEMV=default,occ=0 dv_decode "fp8-block$sfx"
        echo -n "$label"; DOTLM_GEMV=default,occ=6 dv_decode "fp8-block$sfx"
        echo -n "$label"; DOTLM_GEMV=default,i8occ=0 dv_decode "int8$sfx"
        echo -n "$label"; DOTLM_GEMV=default,i8occ=6 dv_decode "int8$sfx"
    done
}
# The device-to-device copy bandwidth, one line: dotlm_gpu_bench prints it
# first and the rest is cut off after 25 s ($L/peaks.log).
dv_copy_bw() {
    timeout 25 stdbuf -oL "$B/dotlm_gpu_bench" --no-sweep --quick >"$L/peaks.log" 2>&1
    grep -m1 "copy D2D" "$L/peaks.log"
}
dv_gb_table() {
    local f
    echo "== M=1 kernel %copy / late / plain / graph"
    for f in "$@"; do
        grep -E '^(fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 ' "$L/gb_$f.log" |
            awk -v f="$f" '{printf "%-13s %-4s %-11s %7s %7s %7s %7s\n", f, $1, $3, $8, $9, $10, $11}'
    done
}

# dv_serve_loadgen NAME MODEL_DIR [loadgen args...]: `dotlm serve` of
# MODEL_DIR on cuda (port 8123, up to 8 sequences, context 2048;
# environment from the caller) until /health answers, bench/loadgen.py
# with the given arguments (--markdown added), then SIGINT; logs
# serve_NAME.log and loadgen_NAME.log, the table's rows echoed.
dv_serve_loadgen() {
    local name=$1 model=$2 sp i
    shift 2
    "$B/dotlm" serve "$model" --backend cuda --port 8123 --max-seqs 8 --ctx 2048 >"$L/serve_$name.log" 2>&1 &
    sp=$!
    for i in $(seq 1 90); do
        python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" \
            >/dev/null 2>&1 && break
        sleep 1
    done
    timeout 100 python3 bench/loadgen.py --url http://127.0.0.1:8123 "$@" --markdown >"$L/loadgen_$name.log" 2>&1
    echo "server $name loadgen rc=$?:"
    grep -E '^\| [0-9]' "$L/loadgen_$name.log"
    kill -INT "$sp"
    wait "$sp"
    echo "serve exit=$?"
}

# GPU clocks and power sampled every 50 ms into $L/smi.csv until
# dv_clocks_table; dv_phase NAME start|end marks a span, and the table
# (bench/lib/smi_phases.py) gives each span's SM clock, power and clock
# event reasons.
dv_clocks_start() {
    local why=clocks_event_reasons.active # (older drivers: clocks_throttle_reasons.active)
    nvidia-smi --query-gpu=$why --format=csv,noheader >/dev/null 2>&1 || why=clocks_throttle_reasons.active
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,$why \
        --format=csv,noheader,nounits -lms 50 >"$L/smi.csv" 2>&1 &
    DV_SMI_PID=$!
}
dv_phase() { echo "$1 $2 $(date '+%Y/%m/%d %H:%M:%S.%6N')" >>"$L/marks.txt"; }
dv_clocks_table() {
    kill "${DV_SMI_PID:-}" 2>/dev/null
    wait "${DV_SMI_PID:-}" 2>/dev/null
    python3 bench/lib/smi_phases.py "$L/smi.csv" "$L/marks.txt" | tee "$L/clocks_table.txt"
}

# Pack $L into $OUT/logs.tgz now (a script calling it after each step still
# brings back what finished when the device time cuts the call short).
dv_pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }

# Wait for the background jobs, then pack $L into $OUT/logs.tgz.
dv_finish() {
    wait
    [ -f "$L/gate.log" ] && tail -2 "$L/gate.log"
    dv_pack
    dv_t
}

# dv_h200_then SCRIPT: pack what ran so far, then on an H200 go on with
# SCRIPT (which does its own dv_init and dv_finish on the same $L); on any
# other card finish here.
dv_h200_then() {
    dv_pack
    dv_t
    case "$DV_GPU" in
    *H200*) bash "$1" ;;
    *) dv_finish ;;
    esac
}
