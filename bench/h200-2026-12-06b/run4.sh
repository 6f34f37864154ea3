#!/usr/bin/env bash
# session 42 call 4: call 1 again (calls 1 and 3 got H100s), in the hope of an H200.
exec bash bench/h200-2026-12-06b/run1.sh "$@"
