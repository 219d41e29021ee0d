"""The child process of `opsdk triton check`: ``python -m opsdk.triton._check_child JOB``.

What opens the model in ONNX Runtime or runs operator kernels runs here, so a crash ends
this process and the check reports it (see :mod:`opsdk.triton._check`).
"""

from __future__ import annotations

import sys

from ._check import judge_job

if __name__ == "__main__":
    judge_job(sys.argv[1])
