#!/usr/bin/env bash
# The main job end to end, as a new user does it: scaffold an operator, build it, validate
# it against its NumPy reference, run it, export it to ONNX, and serve it under a real
# Triton Inference Server on 127.0.0.1. Everything it installs goes into .venv/ and
# .venv-serve/; everything it writes goes into a fresh folder it prints.
set -euo pipefail
. "$(dirname "$0")/_env.sh"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/opsdk-quickstart.XXXXXX")"
cd "$WORK"
step() { printf '\n==> [%s] %s\n' "$1" "$2"; }
echo "working in $WORK"

step 1/8 "scaffold: opsdk new MyOp"
opsdk new MyOp --inputs x:float16,float32 --outputs y --attrs threshold:float=0.5 --domain com.example

step 2/8 "build: CMake + pybind11, cached (the second build is a no-op)"
opsdk build MyOp
opsdk build MyOp

step 3/8 "test: kernel vs NumPy reference for every dtype, shape and edge value"
opsdk test MyOp -q --report "$WORK/report.html"
echo "report: $WORK/report.html"

step 4/8 "check: inference, precision, determinism, no input mutation"
opsdk check MyOp

step 5/8 "run it from Python"
python - <<'PY'
import numpy as np
import opsdk

op = opsdk.load("MyOp")
print(op, "->", op(np.ones(4, np.float32), threshold=0.5))
PY

step 6/8 "export: a checked ONNX model with the custom-domain node"
opsdk export MyOp -o my_op.onnx --shape x=N,16 --force

step 7/8 "triton: a model repository that runs the graph with the opsdk graph executor"
opsdk triton build my_op.onnx -o repo --name my_op --target cpu --max-batch-size 8 --operators "$WORK/operators"

step 8/8 "serve: a real tritonserver on 127.0.0.1, one HTTP request, compared with the graph executor"
export OPSDK_SERVE_VENV="${OPSDK_SERVE_VENV:-$ROOT/.venv-serve}"
bash "$ROOT/.ci/serve_env.sh"
python - <<'PY'
import numpy as np
import tritonclient.http as http

from opsdk.onnx import Session
from opsdk.triton import TritonServer

x = np.random.default_rng(0).normal(size=(2, 16)).astype(np.float32)
want = Session("my_op.onnx").run(None, {"x": x})[0]
with TritonServer("repo", progress=print) as server:
    with http.InferenceServerClient(server.http_url) as client:
        inp = http.InferInput("x", list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        got = client.infer("my_op", [inp]).as_numpy("y")
np.testing.assert_array_equal(got, want)
print(f"served by tritonserver at {server.http_url}: output equals the graph executor's")
PY

printf '\nquickstart OK: scaffolded, built, validated, ran, exported and served MyOp (in %s)\n' "$WORK"
