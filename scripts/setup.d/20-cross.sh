#!/usr/bin/env bash
# The aarch64 cross toolchain and user-mode emulator: Debian's g++-aarch64-linux-gnu and
# qemu-user-static. The AArch64 verification build (kernels for the NPU's AI CPU) and the
# aarch64 wheel tests use them; without them those tests skip with the reason.
set -euo pipefail
if command -v aarch64-linux-gnu-g++ >/dev/null && command -v qemu-aarch64-static >/dev/null; then
  echo "    cross toolchain ready: $(aarch64-linux-gnu-g++ -dumpversion), $(qemu-aarch64-static --version | head -1)"
  exit 0
fi
. "$(dirname "$0")/../_apt.sh"
apt_install "the tests that need them skip with the reason" g++-aarch64-linux-gnu \
  qemu-user-static
echo "    installed $(aarch64-linux-gnu-g++ -dumpversion) and $(qemu-aarch64-static --version | head -1)"
