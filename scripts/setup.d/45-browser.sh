#!/usr/bin/env bash
# Headless Chromium (Debian's chromium package): tests/testing/test_report_browser.py opens the HTML
# reports in it and checks what a person sees (the pass matrix's numbers, the worst case
# first, the filters, the per-node bar chart, no JavaScript errors). The test drives it over
# the DevTools protocol on a pipe (--remote-debugging-pipe): no chromedriver, no port, no
# download at test time. Without it that test skips with the reason.
set -euo pipefail
browser=""
for name in chromium chromium-browser google-chrome; do
  if command -v "$name" >/dev/null; then browser="$name"; break; fi
done
if [ -n "$browser" ]; then
  echo "    $("$browser" --version 2>/dev/null | head -1)"
  exit 0
fi
. "$(dirname "$0")/../_apt.sh"
apt_install "tests/testing/test_report_browser.py skips with the reason" chromium
echo "    installed $(chromium --version 2>/dev/null | head -1)"
