#!/usr/bin/env bash
# PyTorch's CPU build: the oracle of the PyTorch-semantics tests (GridSample against
# torch.nn.functional.grid_sample) and the exporter of the corpus's PyTorch model. Installed
# into the project venv from a local CPU wheel (pip's find-links, /opt/wheels on CI
# machines), about 20 s; never from the index, whose Linux torch is the multi-GB CUDA build.
# Tests that need torch skip with the reason when this fails. onnxscript (from the index, pure
# Python) is what torch's dynamo ONNX exporter writes its graphs with (opsdk.torch's export).
set -euo pipefail
ensure_onnxscript() {
  python -c "import onnxscript" 2>/dev/null || python -m pip install -q "onnxscript>=0.5"
  python -c "import onnxscript; print('    onnxscript', onnxscript.__version__)"
}
TORCH_VERSION="${OPSDK_TORCH_VERSION:-2.13.0}"
if python -c "import sys, torch; sys.exit(torch.__version__ != '${TORCH_VERSION}+cpu')" 2>/dev/null
then
  echo "    torch ${TORCH_VERSION}+cpu already installed"
  ensure_onnxscript
  exit 0
fi
wheel=""
for dir in ${PIP_FIND_LINKS:-} /opt/wheels; do
  for f in "$dir"/torch-"${TORCH_VERSION}"+cpu-*.whl; do
    [ -e "$f" ] && { wheel="$f"; break 2; }
  done
done
if [ -z "$wheel" ]; then
  echo "    no local torch-${TORCH_VERSION}+cpu wheel (looked in \$PIP_FIND_LINKS and" \
       "/opt/wheels); not installing torch from the index (its Linux build is the CUDA one)" >&2
  exit 1
fi
python -m pip install -q "$wheel"
python -c "import torch; print('    torch', torch.__version__)"
ensure_onnxscript
