#!/usr/bin/env bash
# Run every test: lint (ruff), types (mypy), and pytest (SDK tests + shipped operators),
# installing what they need first. Extra arguments go to pytest.
set -euo pipefail
. "$(dirname "$0")/_env.sh"
cd "$ROOT"
echo "==> ruff"; ruff check .
echo "==> mypy"; mypy
echo "==> pytest"; python -m pytest "$@"
