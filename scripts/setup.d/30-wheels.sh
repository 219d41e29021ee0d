#!/usr/bin/env bash
# Manylinux and aarch64 operator wheels: zig c++ and auditwheel come with the project's
# dev extra (pip); this makes Debian's arm64 packages known to apt, so that opsdk can fetch
# the arm64 Python headers (cross builds) and the test its arm64 Python (run under
# qemu-aarch64-static, which 20-cross.sh installs). Without it those tests skip with the
# reason.
set -euo pipefail
python -c "import ziglang, auditwheel" 2>/dev/null || python -m pip install -q ziglang auditwheel
if apt-cache show libpython3.11-dev:arm64 >/dev/null 2>&1; then
  echo "    Debian arm64 packages known to apt; $(python -m ziglang version | sed 's/^/zig /')"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "    needs root and apt-get to add the arm64 architecture (dpkg --add-architecture arm64)" >&2
  exit 1
fi
dpkg --add-architecture arm64
apt-get update -qq
apt-cache show libpython3.11-dev:arm64 >/dev/null
echo "    added the arm64 architecture to apt; $(python -m ziglang version | sed 's/^/zig /')"
