#!/usr/bin/env bash
# ccache: `opsdk package` compiles through it when it is installed, so a wheel rebuilt from
# the same sources (another package, another folder, another test) reuses its objects. The
# package tests build the same kernels many times; without ccache they only take longer.
set -euo pipefail
if command -v ccache >/dev/null; then
  echo "    $(ccache --version | head -1)"
  exit 0
fi
. "$(dirname "$0")/../_apt.sh"
apt_install "package builds run without it" ccache
echo "    installed $(ccache --version | head -1)"
