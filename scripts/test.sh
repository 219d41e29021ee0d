#!/usr/bin/env bash
# Run every test: lint (ruff), types (mypy), and pytest (SDK tests + shipped operators),
# installing what they need first. Extra arguments go to pytest.
set -euo pipefail
. "$(dirname "$0")/_env.sh"
cd "$ROOT"
echo "==> serving environment (tritonserver from nvidia-pytriton, numpy 1.26)"
export OPSDK_SERVE_VENV="${OPSDK_SERVE_VENV:-$ROOT/.venv-serve}"
bash "$ROOT/.ci/serve_env.sh"
echo "==> CANN public headers (for compile checks of generated C++; skipped tests say why if this fails)"
python -m opsdk.ascend.project.headers --fetch || echo "    could not fetch CANN headers; their compile tests will skip with the reason"
# Extra tools some tests need (cross compilers, emulators, pinned runtimes): one script each
# in scripts/setup.d/, run in name order. A script that cannot install its tool says so and
# the tests that need the tool skip with the reason.
for setup in "$ROOT"/scripts/setup.d/*.sh; do
  [ -e "$setup" ] || continue
  echo "==> setup: $(basename "$setup")"
  bash "$setup" || echo "    $(basename "$setup") failed; the tests that need it will skip with the reason"
done
echo "==> ruff"; ruff check .
echo "==> mypy"; mypy
echo "==> pytest"; python -m pytest "$@"
