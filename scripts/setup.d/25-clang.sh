#!/usr/bin/env bash
# clang++ (Debian's clang-19, or clang-16, the oldest that builds the Ascend C model): the
# model's tests run once under g++ and once under clang++. Huawei's own kernel compiler is
# clang-based, and template-library kernels that specialise a class's member templates in
# class scope compile only under clang (GCC bug 85282). Without it those runs skip with the
# reason. Debian bookworm's plain `clang` package is clang 14, too old for the model.
set -euo pipefail
for v in 21 20 19 18 17 16; do
  if command -v "clang++-$v" >/dev/null; then
    echo "    $(clang++-$v --version | head -1)"
    exit 0
  fi
done
. "$(dirname "$0")/../_apt.sh"
why="the model's clang++ test runs skip with the reason"
apt_install "$why" clang-19 || apt_install "$why" clang-16
for v in 19 16; do
  if command -v "clang++-$v" >/dev/null; then
    echo "    installed $(clang++-$v --version | head -1)"
    exit 0
  fi
done
echo "    no clang++ 16 or newer after the install; $why" >&2
exit 1
