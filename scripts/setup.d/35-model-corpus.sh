#!/usr/bin/env bash
# The corpus of real exported models (PaddleOCR det/rec/cls, paddle2onnx exports shipped in
# the rapidocr-onnxruntime wheel): downloaded once into $OPSDK_CACHE_DIR/model-corpus, only
# the .onnx files kept. Fast when cached. tests/onnx/test_model_corpus.py skips with the reason
# when this fails (registry unreachable).
set -euo pipefail
python -m opsdk.testing.corpus --fetch
