#!/usr/bin/env bash
# PyTorch's CPU build: the oracle of the PyTorch-semantics tests (GridSample against
# torch.nn.functional.grid_sample) and the exporter of the corpus's PyTorch model. Installed
# into the project venv from a local CPU wheel (pip's find-links, /opt/wheels on CI
# machines), about 20 s; never from the index, whose Linux torch is the multi-GB CUDA build.
# Tests that need torch skip with the reason when this fails. onnxscript (from the index, pure
# Python) is what torch's dynamo ONNX exporter writes its graphs with (opsdk.torch's export).
# torchvision (from the index, 7.6 MB, --no-deps so pip never swaps in the CUDA torch) builds
# the corpus's ResNet-18, MobileNetV3 and ViT (tests/_helpers/torch_corpus.py).
set -euo pipefail
TORCH_VERSION="${OPSDK_TORCH_VERSION:-2.13.0}"
# the torchvision release built for each torch release (its wheel pins torch==X exactly)
case "$TORCH_VERSION" in
  2.13.*) TORCHVISION_VERSION=0.28.0 ;;
  *) TORCHVISION_VERSION="" ;;
esac
ensure_onnxscript() {
  python -c "import onnxscript" 2>/dev/null || python -m pip install -q "onnxscript>=0.5"
  python -c "import onnxscript; print('    onnxscript', onnxscript.__version__)"
  if [ -z "$TORCHVISION_VERSION" ]; then
    echo "    no torchvision release known for torch $TORCH_VERSION; its corpus tests skip" >&2
  elif ! python -c "import importlib.metadata as m, sys; sys.exit(m.version('torchvision') != '$TORCHVISION_VERSION')" 2>/dev/null; then
    python -m pip install -q pillow
    python -m pip install -q --no-deps "torchvision==$TORCHVISION_VERSION" ||
      echo "    torchvision $TORCHVISION_VERSION could not be installed; its corpus tests skip" >&2
  fi
}
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
