#!/usr/bin/env bash
# The aarch64 cross toolchain and user-mode emulator: Debian's g++-aarch64-linux-gnu and
# qemu-user-static. The AArch64 verification build (kernels for the NPU's AI CPU) and the
# aarch64 wheel tests use them; without them those tests skip with the reason.
set -euo pipefail
if command -v aarch64-linux-gnu-g++ >/dev/null && command -v qemu-aarch64-static >/dev/null; then
  echo "    cross toolchain ready: $(aarch64-linux-gnu-g++ -dumpversion), $(qemu-aarch64-static --version | head -1)"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "    needs root and apt-get to install g++-aarch64-linux-gnu and qemu-user-static" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends g++-aarch64-linux-gnu qemu-user-static >/dev/null
echo "    installed $(aarch64-linux-gnu-g++ -dumpversion) and $(qemu-aarch64-static --version | head -1)"
