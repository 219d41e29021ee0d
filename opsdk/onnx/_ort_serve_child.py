"""The child of :class:`opsdk.onnx._ort_child.OrtChild`, run as ``python -c <this file's
text> model.onnx`` by the ONNX Runtime under test (it imports nothing of opsdk).

It says "version V", opens the model, says "opened" (or "error" and why); then per line
of stdin (a .npz of feeds, and a tab and a .npz to write the outputs to, if wanted) one
line of JSON: the output shapes or ONNX Runtime's error.
"""

import json
import sys
from typing import Any

import numpy as np
import onnxruntime as ort

print("version " + ort.__version__, flush=True)
opts = ort.SessionOptions()
opts.log_severity_level = 4
try:
    sess = ort.InferenceSession(sys.argv[1], opts, providers=["CPUExecutionProvider"])
except Exception as e:
    print("error " + json.dumps(str(e)), flush=True)
    sys.exit(0)
names = [o.name for o in sess.get_outputs()]
print("opened", flush=True)
for line in sys.stdin:
    feeds_path, _, out_path = line.rstrip("\n").partition("\t")
    reply: dict[str, Any]
    try:
        outs = sess.run(names, dict(np.load(feeds_path)))
        if out_path:
            np.savez(out_path, *outs)
        reply = {"shapes": {n: list(np.shape(o)) for n, o in zip(names, outs)}}
    except Exception as e:
        reply = {"error": str(e)}
    print(json.dumps(reply), flush=True)
