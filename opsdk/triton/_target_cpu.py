"""``--target cpu``: the Python backend runs the graph with ``opsdk.onnx.Session``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from onnx import ModelProto

from ._config import base_context, template_env
from ._errors import TritonConfigError
from ._onnx_io import GraphIO
from ._options import RepositoryOptions

__all__ = ["DOC", "OPERATORS_DIR", "render", "resolve", "model_file", "check_folder",
           "copies"]

DOC = "cpu (Triton Python backend; 1/model.py runs model.onnx with opsdk.onnx.Session)"


def render(io: GraphIO, opts: RepositoryOptions, source: str) -> dict[str, str]:
    """config.pbtxt and 1/model.py."""
    ctx = base_context(io, opts, source, DOC)
    ctx.update(backend="python", instance_kind="KIND_CPU", parameters=_parameters(io, opts))
    env = template_env()
    return {
        "config.pbtxt": env.get_template("config_cpu.pbtxt.j2").render(ctx),
        "1/model.py": env.get_template("model.py.j2").render(ctx),
    }


def resolve(io: GraphIO, opts: RepositoryOptions,
            report: Callable[[str], None] | None = None) -> RepositoryOptions:
    """The options as given: nothing depends on the model here."""
    return opts


def model_file(
    proto: ModelProto, io: GraphIO, opts: RepositoryOptions, report: Callable[[str], None]
) -> ModelProto:
    """The graph as given: opsdk's executor runs custom nodes in their kernels."""
    return proto


def check_folder(target: Path) -> None:
    """Nothing to check: the Python backend opens the file model.py names."""


def _parameters(io: GraphIO, opts: RepositoryOptions) -> list[tuple[str, str]]:
    ops = opts.operators_path if opts.operators_path is not None else (
        [OPERATORS_DIR] if _source_operators(io) else [])
    params = [
        ("onnx_model", "model.onnx"),
        ("OPSDK_OPERATORS_PATH", os.pathsep.join(ops)),
        ("threads", str(opts.threads)),
    ]
    if io.custom_ops:
        params.append(("opsdk_custom_ops", ",".join(io.custom_ops)))
    ours = {key for key, _ in params}
    for key, _ in opts.extra_parameters:
        if key in ours:
            raise TritonConfigError(
                f"--parameter {key}=...: opsdk writes the parameter {key!r} itself (model.py "
                "reads it); a second one would contradict it. Drop it (use --operators or "
                "--threads for those)")
    return params + list(opts.extra_parameters)


OPERATORS_DIR = "operators"  # in the model folder: copies of the model's source operators
_NOT_COPIED = ("__pycache__", ".pytest_cache", ".git")


def copies(io: GraphIO, opts: RepositoryOptions) -> dict[str, Path]:
    """Files to copy into the model folder (``operators/<op folder>/...``): the source
    folders of the model's custom operators, so the repository runs wherever it is moved
    and never points back at the checkout it was built from. Operators from installed
    wheels or shipped with opsdk are found by the server's opsdk and not copied; with
    ``--operators`` the user's folders are used as given.

    Example:
        >>> from opsdk.triton._onnx_io import GraphIO
        >>> copies(GraphIO((), (), ()), RepositoryOptions("m"))  # doctest: +SKIP
        {}
    """
    if opts.operators_path is not None:
        return {}
    files: dict[str, Path] = {}
    owners: dict[str, str] = {}
    for op, folder in _source_operators(io):
        other = owners.setdefault(folder.name, op)
        if other != op:
            raise TritonConfigError(
                f"custom ops {other} and {op} live in operator folders both named "
                f"{folder.name!r}, which would share {OPERATORS_DIR}/{folder.name} in the model "
                "folder; rename one folder, or pass --operators DIR to use them in place")
        for f in sorted(folder.rglob("*")):
            rel = f.relative_to(folder)
            if f.is_file() and not any(p in _NOT_COPIED for p in rel.parts) and f.suffix != ".pyc":
                files[f"{OPERATORS_DIR}/{folder.name}/{rel.as_posix()}"] = f
    return files


def _source_operators(io: GraphIO) -> list[tuple[str, Path]]:
    """``(domain::Op, folder)`` of the custom ops found in source folders (not installed)."""
    if not io.custom_ops:
        return []
    from .. import registry
    from ..errors import OperatorNotFound

    found: list[tuple[str, Path]] = []
    for op in io.custom_ops:
        try:
            info = registry.find_operator(op)
        except OperatorNotFound as e:
            raise TritonConfigError(
                f"the model uses custom op {op}, which opsdk cannot find ({e}); pass "
                "--operators DIR (the folder holding its operator folder)"
            ) from e
        if info.origin == "source":
            found.append((op, Path(info.folder).resolve()))
    return found
