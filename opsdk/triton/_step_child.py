"""The child process of the cpu ensemble check: ``python -m opsdk.triton._step_child JOB``.

Opening a step's model with opsdk's Session (ONNX Runtime, the operators' kernels) runs
here, so a crash ends this process and the check reports it (see
:mod:`opsdk.triton._step_check`).
"""

from __future__ import annotations

import sys

from ._step_check import judge_step_job

if __name__ == "__main__":
    judge_step_job(sys.argv[1])
