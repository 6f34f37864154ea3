#!/usr/bin/env bash
# Keep a device call under its 64 MiB carry limit by leaving old bench logs
# out of the copy it makes of the working tree, and put them back after.
#
#   tools/device_trim.sh on [KEEP]   untrack (index only, files stay on
#                                    disk) every bench/h200-* entry but the
#                                    KEEP newest (default 3), list them in
#                                    .git/info/exclude, and print what the
#                                    call will carry
#   tools/device_trim.sh off         track them again, restore the exclude
#                                    file (run it before any commit)
#   tools/device_trim.sh status      whether the trim is on
#
# A call carries the tracked files, the untracked ones git does not ignore,
# and the carried paths (.devpack/devrun.tar.xz, ~22 MB). While the trim is
# on, `git status` shows the logs as deleted: commit nothing, and do not
# `git checkout` files (the index is the trimmed one). "on" refuses to run
# with staged changes or when the trim is already on.
set -eu
cd "$(git rev-parse --show-toplevel)"
EX=.git/info/exclude
SAVE=.git/info/exclude.device_trim
LIMIT=$((64 * 1024 * 1024))

usage() {
    sed -n '2,/^set -eu/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

bytes_carried() {
    local t p=0
    t=$( (git ls-files -z; git ls-files -z --others --exclude-standard) |
        xargs -0 -r stat -c %s -- 2>/dev/null | awk '{s += $1} END {print s + 0}')
    [ -f .devpack/devrun.tar.xz ] && p=$(stat -c %s .devpack/devrun.tar.xz)
    echo "$t $p"
}

case "${1:-}" in
on)
    keep=${2:-3}
    case "$keep" in '' | *[!0-9]*) echo "device_trim: KEEP must be a number, got '$keep'" >&2; exit 2 ;; esac
    if [ -f "$SAVE" ]; then
        echo "device_trim: already on (run 'tools/device_trim.sh off' first)" >&2
        exit 1
    fi
    if ! git diff --cached --quiet; then
        echo "device_trim: the index has staged changes; commit or unstage them first" >&2
        exit 1
    fi
    # session directories and loose logs, oldest first (their names sort by date)
    mapfile -t all < <(git ls-files 'bench/h200-*' | cut -d/ -f2 | sort -u)
    n=${#all[@]}
    if [ "$n" -le "$keep" ]; then
        echo "device_trim: $n bench/h200-* entries, keeping $keep: nothing to leave out"
        exit 0
    fi
    if [ -f "$EX" ]; then cp "$EX" "$SAVE"; else : >"$SAVE"; fi
    drop=("${all[@]:0:n-keep}")
    for d in "${drop[@]}"; do
        git rm -r -q --cached -- "bench/$d"
        echo "/bench/$d" >>"$EX"
    done
    read -r t p < <(bytes_carried)
    echo "device_trim: on, ${#drop[@]} of $n bench/h200-* entries left out (kept: ${all[*]:n-keep})"
    echo "device_trim: the call carries $((t / 1048576)) MiB of tree + $((p / 1048576)) MiB of pack = $(((t + p) / 1048576)) MiB of 64"
    if [ $((t + p)) -gt "$LIMIT" ]; then
        echo "device_trim: over the limit: keep fewer (tools/device_trim.sh off; ... on 1)" >&2
        exit 1
    fi
    ;;
off)
    if [ ! -f "$SAVE" ]; then
        echo "device_trim: not on"
        exit 0
    fi
    mv "$SAVE" "$EX"
    [ -s "$EX" ] || rm -f "$EX"
    git reset -q -- bench
    echo "device_trim: off (bench logs tracked again)"
    ;;
status)
    if [ -f "$SAVE" ]; then echo "device_trim: on"; else echo "device_trim: off"; fi
    ;;
-h | --help)
    usage
    ;;
*)
    usage >&2
    exit 2
    ;;
esac
