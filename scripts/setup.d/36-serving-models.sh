#!/usr/bin/env bash
# Models whose inputs test serving (tests/triton/test_serving_models.py): silero-vad (a rank-0
# sample rate picking nested If branches, an LSTM state) from the silero-vad wheel and
# YOLOv8n (anchor count fixed by the strides) from the nudenet wheel, downloaded once with
# `pip download --no-deps` into $OPSDK_CACHE_DIR/model-corpus, only the .onnx kept. Fast
# when cached; the tests skip with the reason when this fails (registry unreachable).
set -euo pipefail
python -m opsdk.testing.corpus --fetch silero-vad yolov8n
