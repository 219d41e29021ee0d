#!/usr/bin/env bash
# Run every test: lint (ruff), types (mypy), and pytest (SDK tests + shipped operators),
# installing what they need first. Extra arguments go to pytest.
set -euo pipefail
. "$(dirname "$0")/_env.sh"
cd "$ROOT"
echo "==> serving environment (tritonserver from nvidia-pytriton, numpy 1.26)"
export OPSDK_SERVE_VENV="${OPSDK_SERVE_VENV:-$ROOT/.venv-serve}"
bash "$ROOT/.ci/serve_env.sh"
# Extra tools some tests need (cross compilers, emulators, pinned runtimes): one script each
# in scripts/setup.d/, run in name order. A script that cannot install its tool says so and
# the tests that need the tool skip with the reason.
for setup in "$ROOT"/scripts/setup.d/*.sh; do
  [ -e "$setup" ] || continue
  echo "==> setup: $(basename "$setup")"
  bash "$setup" || echo "    $(basename "$setup") failed; the tests that need it will skip with the reason"
done
# After the tools: the torch-npu wheel the headers come from is the release of the torch
# that scripts/setup.d installed (its torch_npu headers compile only against that torch).
echo "==> CANN public headers (for compile checks of generated C++ and the torch NPU kernels; skipped tests say why if this fails)"
python -m opsdk.ascend.project.headers --fetch || echo "    could not fetch CANN headers; their compile tests will skip with the reason"
# The package tests (tests/package/test_package_cross.py, test_package_wheel.py) spend minutes
# compiling the same kernels and entry points for several targets. A full run makes those
# builds on the second core while the first runs the tests in order: the same `opsdk
# package` calls the tests make, in the background, output in a log, stopped if still
# running at the end. Their objects land in ccache (scripts/setup.d/15-ccache.sh) and zig's
# cache, where the tests' own builds find them; without ccache this only costs CPU.
warm_pid=""
if [ $# -eq 0 ] && command -v setsid >/dev/null; then
  warm_log="$(mktemp -t opsdk-warm.XXXXXX)"
  echo "==> warming the package builds' caches in the background (log: $warm_log)"
  setsid bash -c '
    out="$(mktemp -d)"
    ops=("$1/operators/thresholded_relu" "$1/operators/gelu")
    python -m opsdk package "${ops[@]}" -o "$out/cross" --name acme-ops --version 1.2.0 \
      --platform manylinux2014_x86_64 --platform manylinux2014_aarch64 --isa-variants none
    python -m opsdk package "${ops[0]}" -o "$out/py312" --platform manylinux2014_x86_64 \
      --platform native --python 3.12 --no-cann
    python -m opsdk package "${ops[@]}" -o "$out/native" --name acme-ops --version 1.2.0
    rm -rf "$out"' warm "$ROOT" >"$warm_log" 2>&1 < /dev/null &
  warm_pid=$!
fi
stop_warming() {
  if [ -n "$warm_pid" ] && kill -0 "$warm_pid" 2>/dev/null; then
    kill -TERM -- "-$warm_pid" 2>/dev/null || true
    wait "$warm_pid" 2>/dev/null || true
  fi
}
trap stop_warming EXIT
echo "==> ruff"; ruff check .
echo "==> mypy"; mypy
# A full run (no arguments) spreads the test files over OPSDK_TEST_WORKERS processes (2 by
# default, the CI machine's cores; 1 runs them in one process). Each file runs whole in one
# worker (--dist loadfile), so a module's fixtures (built wheels, servers) are made once.
# Measured on 2 loaded cores: 1,318 s against 1,777 s in one process.
workers=()
if [ $# -eq 0 ] && [ "${OPSDK_TEST_WORKERS:-2}" -gt 1 ]; then
  workers=(-n "${OPSDK_TEST_WORKERS:-2}" --dist loadfile)
fi
echo "==> pytest"; python -m pytest "${workers[@]}" "$@"
