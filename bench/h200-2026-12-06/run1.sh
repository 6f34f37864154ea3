#!/usr/bin/env bash
# session 41 call 1: the fortieth session's prepared call, run as it was
# written (the thirty-ninth session's last build, not yet run on a GPU:
# every GPU test, the M = 1 GEMVs per knob, W8A8 decode with i8xp 0 / 2 on
# Qwen3-8B and 0 / 1 / 2 on Qwen3-14B shapes, an nsys trace if there is
# nsys). Until this commit this file was a copy of it with another header.
exec bash bench/h200-2026-12-05f/run1.sh "$@"
