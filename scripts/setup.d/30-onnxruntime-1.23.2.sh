#!/usr/bin/env bash
# ONNX Runtime 1.23.2 (the version the Triton GE backend links) in its own venv under the
# opsdk cache ($OPSDK_ORT_VENV, else <cache>/onnxruntime-1.23.2): the ascend serving tests
# open and run the model files they write with it, as the backend does. Without it those
# tests skip with the reason. A second run checks the venv and exits.
set -euo pipefail
python -c "from opsdk.triton import ensure_ort_env; print(ensure_ort_env())"
