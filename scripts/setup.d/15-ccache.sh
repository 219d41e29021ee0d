#!/usr/bin/env bash
# ccache: `opsdk package` compiles through it when it is installed, so a wheel rebuilt from
# the same sources (another package, another folder, another test) reuses its objects. The
# package tests build the same kernels many times; without ccache they only take longer.
set -euo pipefail
if command -v ccache >/dev/null; then
  echo "    $(ccache --version | head -1)"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "    needs root and apt-get to install ccache; package builds run without it" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends ccache >/dev/null
echo "    installed $(ccache --version | head -1)"
