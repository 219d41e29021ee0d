# Shared by scripts/*.sh: create (once) and activate the project's virtual environment.
# A fresh machine needs only Python 3, pip and a C++ compiler.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${OPSDK_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating $VENV"
  "$PY" -m venv "$VENV"
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
stamp="$VENV/.opsdk-installed"
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  echo "==> installing opsdk and its test tools into $VENV"
  python -m pip install -q --upgrade pip
  python -m pip install -q -e "$ROOT[dev]"
  touch "$stamp"
fi
