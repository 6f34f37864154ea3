#!/usr/bin/env bash
# session 42 call 3: call 1 again (it got an H100), in the hope of an H200.
exec bash bench/h200-2026-12-06b/run1.sh "$@"
