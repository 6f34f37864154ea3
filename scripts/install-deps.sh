#!/usr/bin/env bash
# Install everything dotlm needs to build and test on Debian/Ubuntu:
# build tools and libraries from apt, test-only Python references from PyPI.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config git python3 python3-pip clang valgrind \
  libjansson-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev >/dev/null
# Test-only references: HF tokenizers ids, jinja2 renderings, the openai client, numpy.
PIP_PKGS="numpy tokenizers jinja2 openai"
python3 -m pip install -q $PIP_PKGS 2>/dev/null ||
  python3 -m pip install -q --break-system-packages $PIP_PKGS
echo "dotlm dependencies installed"
