"""A corpus of real exported models, taken from registry packages and cached.

opsdk's own graphs are not enough to test rewrites, the doctor, the graph executor and
serving: exporters write graphs differently (paddle2onnx stores every weight as a
``Constant`` node and writes ``-1`` for dynamic dims). The corpus holds the PaddleOCR
detection, recognition and direction-classification models (paddle2onnx exports) that the
``rapidocr-onnxruntime`` wheel ships. :func:`fetch` downloads that wheel once with
``pip download --no-deps``, keeps only the ``.onnx`` files in
``$OPSDK_CACHE_DIR/model-corpus/<package>-<version>/`` and deletes the wheel; nothing is
committed. Tests call :func:`find` and skip with the reason when a model is missing.

:data:`SERVING_MODELS` are models whose inputs test serving: silero-vad (a rank-0 sample
rate ``sr`` chosen by nested ``If``s, an LSTM state) from the ``silero-vad`` wheel, and
YOLOv8n (an anchor count fixed by the strides) from the ``nudenet`` wheel. They are fetched
on their own (``--fetch silero-vad yolov8n``).

Run once (CI does, through ``scripts/setup.d``): ``python -m opsdk.testing.corpus --fetch``.

Example:
    >>> from opsdk.testing.corpus import MODELS, find
    >>> [m.name for m in MODELS]
    ['ppocr-det', 'ppocr-rec', 'ppocr-cls']
    >>> find("ppocr-cls")  # doctest: +SKIP
    PosixPath('.../model-corpus/rapidocr-onnxruntime-1.4.4/ch_ppocr_mobile_v2.0_cls_infer.onnx')
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .._fetch import FetchError, pip_download

__all__ = ["CorpusModel", "MODELS", "SERVING_MODELS", "find", "fetch", "main"]


@dataclass(frozen=True)
class CorpusModel:
    """One model of the corpus: where it comes from and a small input to run it on.

    Attributes:
        name: short name used by tests and reports.
        package: the registry package whose wheel ships the model.
        version: the pinned package version (the files are fixed with it).
        member: the model's path inside the wheel.
        feeds: input name -> a small shape to run it on (dynamic dims chosen small).
        exporter: what wrote the model.
    """

    name: str
    package: str
    version: str
    member: str
    feeds: dict[str, tuple[int, ...]]
    exporter: str

    @property
    def requirement(self) -> str:
        """The pip requirement, pinned."""
        return f"{self.package}=={self.version}"

    def path(self) -> Path:
        """Where the cached model lives (it may not exist yet)."""
        return _root() / f"{self.package}-{self.version}" / Path(self.member).name


_OCR = ("rapidocr-onnxruntime", "1.4.4")
MODELS: tuple[CorpusModel, ...] = (
    CorpusModel("ppocr-det", *_OCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                {"x": (1, 3, 64, 96)}, "paddle2onnx (PP-OCRv4 text detection)"),
    CorpusModel("ppocr-rec", *_OCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                {"x": (1, 3, 48, 160)}, "paddle2onnx (PP-OCRv4 text recognition)"),
    CorpusModel("ppocr-cls", *_OCR,
                "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                {"x": (2, 3, 48, 192)}, "paddle2onnx (PP-OCR v2.0 text direction)"),
)


SERVING_MODELS: tuple[CorpusModel, ...] = (
    CorpusModel("silero-vad", "silero-vad", "6.2.3", "silero_vad/data/silero_vad.onnx",
                {"input": (1, 512), "state": (2, 1, 128), "sr": ()},
                "torch.onnx (silero-vad v5: If on the rank-0 sr, LSTM state)"),
    CorpusModel("yolov8n", "nudenet", "3.4.2", "nudenet/320n.onnx",
                {"images": (1, 3, 320, 320)}, "ultralytics (YOLOv8n detector of NudeNet)"),
)


def _root() -> Path:
    from ..build import cache_dir

    return cache_dir() / "model-corpus"


def _model(name: str) -> CorpusModel:
    for m in MODELS + SERVING_MODELS:
        if m.name == name:
            return m
    known = ", ".join(m.name for m in MODELS + SERVING_MODELS)
    raise KeyError(f"no corpus model {name!r}; known: {known}")


def find(name: str) -> Path | None:
    """The cached file of corpus model ``name``, or None when it was not fetched."""
    path = _model(name).path()
    return path if path.is_file() else None


def _extract(wheel: Path, members: Sequence[str], target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for member in members:
            if member not in names:
                raise FetchError(f"{wheel.name} does not ship {member}")
            tmp = target / (Path(member).name + ".part")
            tmp.write_bytes(zf.read(member))
            tmp.replace(target / Path(member).name)  # atomic: readers never see half a file


def fetch(timeout: float = 600.0, names: Sequence[str] = ()) -> list[Path]:
    """Download what is missing (one wheel per package) and return the models' paths:
    ``names``, or every model of :data:`MODELS`.

    Raises:
        FetchError: the registry is unreachable or the wheel lacks a model.

    Example:
        >>> [p.name for p in fetch()]  # doctest: +SKIP
        ['ch_PP-OCRv4_det_infer.onnx', 'ch_PP-OCRv4_rec_infer.onnx', ...]
    """
    models = [_model(n) for n in names] if names else list(MODELS)
    missing: dict[str, list[CorpusModel]] = {}
    for m in models:
        if not m.path().is_file():
            missing.setdefault(m.requirement, []).append(m)
    for requirement, group in missing.items():
        _root().mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=_root(), prefix="wheel-") as tmp:
            wheel = pip_download(requirement, Path(tmp), timeout)
            _extract(wheel, [m.member for m in group], group[0].path().parent)
    return [m.path() for m in models]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m opsdk.testing.corpus [--fetch] [--clear]``: list (or fetch) the corpus."""
    p = argparse.ArgumentParser(
        prog="python -m opsdk.testing.corpus", description=__doc__.split("\n")[0]
    )
    p.add_argument("--fetch", action="store_true", help="download the models that are missing")
    p.add_argument("names", nargs="*", help="models to fetch (default: the OCR corpus)")
    p.add_argument("--clear", action="store_true", help="delete the cached corpus first")
    args = p.parse_args(argv)
    try:
        models = [_model(n) for n in args.names] if args.names else list(MODELS)
    except KeyError as e:
        print(f"model corpus: {e.args[0]}", file=sys.stderr)
        return 2
    if args.clear:
        shutil.rmtree(_root(), ignore_errors=True)
    if args.fetch:
        try:
            fetch(names=args.names)
        except FetchError as e:
            print(f"model corpus: {e}", file=sys.stderr)
            return 1
    status = 0
    for m in models:
        found = find(m.name)
        hint = f"missing (python -m opsdk.testing.corpus --fetch {m.name})"
        print(f"{m.name:10s} {found or hint}")
        status |= found is None
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
