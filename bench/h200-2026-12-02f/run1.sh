#!/usr/bin/env bash
# session 29 call 1: the read lab (bench/lab/read_lab.cu): the best a
# read-only kernel reaches at the M = 1 GEMV sizes, in three launch modes,
# (no pack: the tree and the pack together exceed the carry limit)
. bench/lib/device_prelude.sh
dv_init
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/read_lab bench/lab/read_lab.cu > $L/nvcc.log 2>&1 || { cat $L/nvcc.log; exit 1; }
cuobjdump -sass /tmp/read_lab > $L/read_lab.sass 2>&1
# loads issued before the first use in the whole-row kernel
awk '/Function : _Z5k_rowILi10ELi1ELi0E/{f=1} f&&/LDG/{n++} f&&/LOP3/{print "k_row<10,1,0>: LDG before first LOP3:", n; exit}' $L/read_lab.sass
timeout 200 /tmp/read_lab 200 > $L/read_lab.log 2>&1; echo "read_lab rc=$?"
dv_finish
cat $L/read_lab.log | cut -c1-200
