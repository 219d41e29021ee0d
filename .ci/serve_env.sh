#!/usr/bin/env bash
# Build the serving environment for `opsdk serve` and the Triton tests, from scratch.
#
# The Triton Inference Server comes from the nvidia-pytriton wheel (tritonserver binary, the
# Python backend and its stubs). That wheel needs numpy < 2, and its Python-backend stub
# misreads numpy 2 arrays, so the server and the models it runs live in their own venv with
# numpy 1.26, separate from the main (numpy 2) environment. opsdk is installed there
# editable so that the generated model.py can `import opsdk`.
#
# Usage:   bash .ci/serve_env.sh            # venv at $OPSDK_SERVE_VENV or <repo>/.venv-serve
#          OPSDK_SERVE_VENV=/path bash .ci/serve_env.sh
#          PYTHON=python3.11 bash .ci/serve_env.sh
# Idempotent: a second run only checks the venv (about a second) and exits.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${OPSDK_SERVE_VENV:-$REPO/.venv-serve}"
PYTHON="${PYTHON:-python3}"

# The server and numpy<2; opsdk's own dependencies come from pyproject.toml, resolved with
# numpy<2 (ml_dtypes, onnx, onnxruntime, pybind11, cmake, ninja, platformdirs, jinja2, ...).
# Pillow decodes the image bytes a pipeline's first step receives (PNG, JPEG; one wheel with
# its codecs, no system library), as the OCR ensemble's decode step does.
SERVER_PKGS=("nvidia-pytriton>=0.5" "numpy>=1.26,<2" "pillow>=10")

say() { printf 'serve_env: %s\n' "$*"; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64|Linux-aarch64) ;;
  *) say "nvidia-pytriton ships tritonserver for Linux x86_64/aarch64 only;" \
         "this is $(uname -s)-$(uname -m): nothing to do"; exit 0 ;;
esac

deps_hash="$(sha256sum "$REPO/pyproject.toml" | cut -c1-16)"
want_stamp="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])') ${SERVER_PKGS[*]} pyproject:$deps_hash"
stamp_file="$VENV/.opsdk-serve-stamp"

check_venv() {
  "$VENV/bin/python" - "$REPO" <<'EOF'
import pathlib, sys
import numpy, onnx, onnxruntime, pytriton, PIL.Image  # noqa: F401
import opsdk
repo = pathlib.Path(sys.argv[1]).resolve()
assert int(numpy.__version__.split(".")[0]) < 2, f"numpy {numpy.__version__} is not < 2"
where = pathlib.Path(opsdk.__file__).resolve().parent.parent
assert where == repo, f"opsdk is imported from {where}, expected {repo}"
root = pathlib.Path(pytriton.__file__).parent / "tritonserver"
assert (root / "bin" / "tritonserver").is_file(), f"no tritonserver binary under {root}"
EOF
}

if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$want_stamp" ]] && check_venv 2>/dev/null; then
  say "ready: $VENV (numpy<2, nvidia-pytriton, opsdk from $REPO)"
  exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  say "creating venv $VENV with $("$PYTHON" --version 2>&1)"
  "$PYTHON" -m venv "$VENV"
fi
say "installing ${SERVER_PKGS[*]}"
"$VENV/bin/python" -m pip install --quiet "${SERVER_PKGS[@]}"
say "installing opsdk (editable) from $REPO with its dependencies, under numpy<2"
"$VENV/bin/python" -m pip install --quiet -e "$REPO" "numpy>=1.26,<2"

if ! check_venv; then
  say "error: the venv at $VENV failed its check (see above)"
  exit 1
fi
printf '%s' "$want_stamp" > "$stamp_file"
say "ready: $VENV"
say "tests and 'opsdk serve' find it through OPSDK_SERVE_VENV=$VENV (or at <repo>/.venv-serve)"
