"""The child of :func:`opsdk.triton._ort_check.run_ort_child`, run as ``python -c <this
file's text> model feeds.npz out.npz`` by the pinned ONNX Runtime (it imports nothing of
opsdk): it opens the model (saying so on stdout, so a crash tells opening from running),
runs it on the feeds, writes the outputs; the last stdout line is the I/O as JSON.
"""

import json
import sys
from typing import Any

import numpy as np
import onnxruntime as ort

model, feeds_path, out_path = sys.argv[1:4]
print("opsdk-ort-version " + ort.__version__, flush=True)
sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
print("opsdk-ort-opened", flush=True)
feeds = {k: v for k, v in np.load(feeds_path).items()
         if k in {i.name for i in sess.get_inputs()}}
names = [o.name for o in sess.get_outputs()]
np.savez(out_path, *sess.run(names, feeds))


def io(vs: Any) -> list[Any]:
    return [[v.name, v.type, [d if isinstance(d, int) else str(d) for d in v.shape]]
            for v in vs]


print(json.dumps({"version": ort.__version__, "inputs": io(sess.get_inputs()),
                  "outputs": io(sess.get_outputs())}))
