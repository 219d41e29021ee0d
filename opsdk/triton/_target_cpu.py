"""``--target cpu``: the Python backend runs the graph with ``opsdk.onnx.Session``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from ..registry import OperatorInfo
from ._config import base_context, check_preferred, template_env
from ._errors import TritonConfigError
from ._onnx_io import GraphIO
from ._options import RepositoryOptions
from ._plan import RepositoryPlan, batch_size

__all__ = ["DOC", "OPERATORS_DIR", "plan", "render", "model_file", "check_folder", "copies"]

DOC = "cpu (Triton Python backend; 1/model.py runs model.onnx with opsdk.onnx.Session)"


def plan(io: GraphIO, opts: RepositoryOptions, source: str,
         operators: Mapping[str, OperatorInfo],
         report: Callable[[str], None] | None = None) -> RepositoryPlan:
    """The options as given (nothing depends on the model here), checked against ``io``."""
    max_batch = batch_size(io, opts)
    preferred = check_preferred(opts.preferred_batch_sizes, opts, max_batch)
    out = RepositoryPlan(opts, source, io, io, max_batch, tuple(preferred), operators)
    _parameters(out)
    return out


def model_file(plan: RepositoryPlan, report: Callable[[str], None]) -> RepositoryPlan:
    """The graph as given: opsdk's executor runs custom nodes in their kernels."""
    return plan


def render(plan: RepositoryPlan) -> dict[str, str]:
    """config.pbtxt and 1/model.py."""
    ctx = base_context(plan.config_io, plan, DOC)
    ctx.update(backend="python", instance_kind="KIND_CPU", parameters=_parameters(plan))
    env = template_env()
    return {
        "config.pbtxt": env.get_template("config_cpu.pbtxt.j2").render(ctx),
        "1/model.py": env.get_template("model.py.j2").render(ctx),
    }


def check_folder(target: Path) -> None:
    """Nothing to check: the Python backend opens the file model.py names."""


def _parameters(plan: RepositoryPlan) -> list[tuple[str, str]]:
    opts, io = plan.options, plan.config_io
    ops = opts.operators_path if opts.operators_path is not None else (
        [OPERATORS_DIR] if _source_operators(plan) else [])
    params = [
        ("onnx_model", "model.onnx"),
        ("OPSDK_OPERATORS_PATH", os.pathsep.join(ops)),
        ("threads", str(opts.host.threads)),
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


def copies(plan: RepositoryPlan) -> dict[str, Path]:
    """Files to copy into the model folder (``operators/<op folder>/...``): the source
    folders of the model's custom operators, so the repository runs wherever it is moved
    and never points back at the checkout it was built from. Operators from installed
    wheels or shipped with opsdk are found by the server's opsdk and not copied; with
    ``--operators`` the user's folders are used as given.

    Example:
        >>> from opsdk.triton._onnx_io import GraphIO
        >>> io = GraphIO((), (), ())
        >>> copies(plan(io, RepositoryOptions("m"), "m.onnx", {}))
        {}
    """
    if plan.options.operators_path is not None:
        return {}
    files: dict[str, Path] = {}
    owners: dict[str, str] = {}
    for op, folder in _source_operators(plan):
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


def _source_operators(plan: RepositoryPlan) -> list[tuple[str, Path]]:
    """``(domain::Op, folder)`` of the custom ops found in source folders (not installed),
    looked up in the plan's operator index."""
    found: list[tuple[str, Path]] = []
    for op in plan.config_io.custom_ops:
        info = plan.operators.get(op)
        if info is None:
            _not_found(op)
        elif info.origin == "source":
            found.append((op, Path(info.folder).resolve()))
    return found


def _not_found(op: str) -> None:
    """Raise the registry's own error for ``op`` (it names the operators it knows)."""
    from .. import registry
    from ..errors import OperatorNotFound

    try:
        registry.find_operator(op)
    except OperatorNotFound as e:
        raise TritonConfigError(
            f"the model uses custom op {op}, which opsdk cannot find ({e}); pass "
            "--operators DIR (the folder holding its operator folder)"
        ) from e
    raise TritonConfigError(
        f"the model uses custom op {op}, which the operator scan of this build did not find; "
        "pass --operators DIR (the folder holding its operator folder)")
