"""Download one wheel from the package index with pip, for caches of files taken from it.

Used by :mod:`opsdk.ascend.project.headers` (CANN headers inside torch-npu) and
:mod:`opsdk.testing.corpus` (ONNX models inside OCR wheels). Only ``pip download
--no-deps`` is run; nothing is installed.

Example:
    >>> from opsdk._fetch import pip_download
    >>> pip_download("rapidocr-onnxruntime==1.4.4", tmp_dir)  # doctest: +SKIP
    PosixPath('.../rapidocr_onnxruntime-1.4.4-py3-none-any.whl')
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .errors import FetchError

__all__ = ["FetchError", "pip_download"]


def pip_download(requirement: str, dest: Path, timeout: float = 600.0) -> Path:
    """``pip download --no-deps --only-binary=:all: requirement`` into ``dest``; the wheel.

    Raises:
        FetchError: pip failed or took longer than ``timeout`` seconds; the message has
            pip's last lines.
    """
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q"]
    cmd += ["-d", str(dest), requirement]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise FetchError(f"pip download {requirement} took longer than {timeout:.0f}s") from None
    wheels = sorted(dest.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise FetchError(
            f"could not download {requirement}: {' | '.join(tail) or 'no wheel'}; check that "
            "pip reaches the package index"
        )
    return wheels[0]
