#!/usr/bin/env bash
# session 43 call 4 (an H100 held after run2's guard): the final build's
# verification: every GPU unit test and the fixtures on cuda, the fixtures
# again with fp8=hf, the SASS gate, and the SASS size of the M = 1 ring
# with fold and with hf.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_gate
dv_tests
DOTLM_GEMV=default,fp8=hf DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures_hf.log 2>&1
echo "fixtures fp8=hf rc=$? $(tail -1 $L/fixtures_hf.log)"
for cv in 2 5; do # fold, hf: the M = 1 ring (xpf=2) reading the twin
  fn="_Z12dl_k_gemv_faILi3ELi1ELi4ELi${cv}ELi2ELb1ELi0ELi2EEvPKf9dl_gv_jobii"
  cuobjdump -sass -fun "$fn" $B/dotlm > $L/sass_cv$cv.txt 2>&1
  echo "sass CV=$cv: $(grep -cE '/\*[0-9a-f]{4}\*/' $L/sass_cv$cv.txt) instructions, HFMA2 $(grep -c 'HFMA2' $L/sass_cv$cv.txt), FFMA $(grep -c 'FFMA' $L/sass_cv$cv.txt)"
done
dv_finish
