"""`opsdk triton build`: an ONNX model -> a Triton model repository (npu_ge or CPU).

The options and the writing of the folder live here; each target (``_target_cpu``,
``_target_ascend``) owns its checks, its template and the model file it writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path, PurePosixPath
from types import ModuleType

import onnx

from .._written import (
    read_record,
    read_record_data,
    remove_empty_dirs,
    remove_file,
    safe_target,
    sha256,
    walk_files,
    write_file,
    write_record,
)
from ..onnx import catalog_scope, model_refusals, tensor_data_problem
from . import _target_ascend, _target_cpu
from ._config import BANNER
from ._errors import TritonConfigError
from ._onnx_io import GraphIO, read_graph_io
from ._options import TARGETS, AscendOptions, CpuOptions, RepositoryOptions
from ._plan import AUTO_MAX_BATCH, RepositoryPlan, operator_index, spec_index

__all__ = ["RepositoryOptions", "AscendOptions", "CpuOptions", "RepositoryPlan",
           "plan_repository", "write_repository", "build_repository", "render_model",
           "recorded_cann", "BANNER", "TARGETS", "AUTO_MAX_BATCH"]

_TARGET_MODULES: dict[str, ModuleType] = {"cpu": _target_cpu, "ascend": _target_ascend}


def _plan_config(io: GraphIO, options: RepositoryOptions, source: str,
                 report: Callable[[str], None] | None = None) -> RepositoryPlan:
    """The config's plan of ``io``: the options checked, then the target's decisions (made
    with one scan of the operator folders, whose index every lookup below reads)."""
    options.check()
    # the ascend target's checks look operators up (GE's parser rules); a cpu model without
    # custom ops looks none up, so it scans nothing
    scan = options.target == "ascend" or bool(io.custom_ops)
    operators = operator_index() if scan else {}
    with catalog_scope(spec_index(operators)) if scan else nullcontext():
        plan: RepositoryPlan = _TARGET_MODULES[options.target].plan(
            io, options, source, operators, report)
    return plan


def plan_repository(
    model: str | Path | onnx.ModelProto,
    options: RepositoryOptions,
    report: Callable[[str], None] | None = None,
    source: str | None = None,
) -> RepositoryPlan:
    """Everything ``opsdk triton build`` decides for ``model``, decided once (see
    :class:`RepositoryPlan`): every check runs here, before anything is written, and the
    model file to write is made here. ``report`` gets one line per change to the model.
    ``source`` names the model in the banners (default: the file's name).

    Example:
        >>> from onnx import helper, TensorProto as T
        >>> g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
        ...     [helper.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
        ...     [helper.make_tensor_value_info("y", T.FLOAT, ["n", 4])])
        >>> plan = plan_repository(helper.make_model(g), RepositoryOptions("relu"))
        >>> plan.max_batch_size, plan.cann is None
        (32, True)
    """
    label = str(model) if not isinstance(model, onnx.ModelProto) else (source or "model")
    if source is None:
        source = Path(model).name if not isinstance(model, onnx.ModelProto) else "model.onnx"
    io = read_graph_io(model)
    note = report or (lambda line: None)
    plan = _plan_config(io, options, source, note)
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))
    for t in proto.graph.initializer:
        problem = tensor_data_problem(t)
        if problem:
            raise TritonConfigError(
                f"{label}: {problem}; ONNX's checker and ONNX Runtime reject such a model "
                "(see `opsdk doctor`): re-export it or store the values")
    with catalog_scope(plan.specs()) if plan.operators else nullcontext():
        _refuse_invalid(label, proto)  # the operators it looks up are the plan's index
        done: RepositoryPlan = _TARGET_MODULES[plan.options.target].model_file(
            replace(plan, proto=proto), note)
    return done


def _refuse_invalid(label: str, proto: onnx.ModelProto) -> None:
    """Refuse a model ONNX's checker or ONNX Runtime refuses (a repository of it would not
    load), naming the first reason and how many more there are."""
    found = model_refusals(proto)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise TritonConfigError(
            f"{label}: {found[0]}{more}; no repository was written. Repair the model (re-export "
            f"it, or fix the script that edited it); `opsdk doctor {label}` lists every problem")


def render_model(
    io: GraphIO, opts: RepositoryOptions, source: str = "model.onnx"
) -> dict[str, str]:
    """Render the text files of one model folder: ``{"config.pbtxt": ..., "1/model.py": ...}``
    from the config's plan of ``io`` (no model file is made).

    Example:
        >>> from onnx import helper, TensorProto as T
        >>> from opsdk.triton._onnx_io import read_graph_io
        >>> g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
        ...     [helper.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
        ...     [helper.make_tensor_value_info("y", T.FLOAT, ["n", 4])])
        >>> files = render_model(read_graph_io(helper.make_model(g)),
        ...                      RepositoryOptions("relu", operators_path=()))
        >>> sorted(files), "max_batch_size: 32" in files["config.pbtxt"]
        (['1/model.py', 'config.pbtxt'], True)
    """
    return _render(_plan_config(io, opts, source))


def _render(plan: RepositoryPlan) -> dict[str, str]:
    files: dict[str, str] = _TARGET_MODULES[plan.options.target].render(plan)
    return files


def write_repository(
    plan: RepositoryPlan,
    out_dir: str | Path,
    force: bool = False,
    report: Callable[[str], None] | None = None,
) -> Path:
    """Write the model folder of ``plan`` (:func:`plan_repository`) into ``out_dir``; return
    it. The CANN release of an ascend plan is recorded in the folder's file record, for
    ``opsdk triton check``.

    Example:
        >>> plan = plan_repository("m.onnx", RepositoryOptions("m"))  # doctest: +SKIP
        >>> write_repository(plan, "repo")  # doctest: +SKIP
        PosixPath('repo/m')
    """
    if plan.proto is None:
        raise TritonConfigError(
            f"{plan.name}: this plan has no model file (it planned a config only); pass "
            "write_repository a plan from plan_repository")
    report = report or (lambda line: None)
    module = _TARGET_MODULES[plan.options.target]
    files = _render(plan)
    target = Path(out_dir) / plan.name
    module.check_folder(target)
    # read before making room: a rebuild may copy the operators from the folder it replaces
    copied = {rel: src.read_bytes() for rel, src in module.copies(plan).items()}
    _make_room(target, force)
    target.mkdir(parents=True)
    data: dict[str, str | bytes] = {"1/model.onnx": plan.proto.SerializeToString(), **files,
                                    **copied}
    for rel, content in data.items():  # the model's external data is inlined
        write_file(target, rel, content)
    _report_copies(copied, plan.name, report)
    meta = {} if plan.cann is None else {"cann": str(plan.cann.version),
                                         "cann_reason": plan.cann.reason}
    write_record(target, MANIFEST, {rel: sha256(content) for rel, content in data.items()},
                 **meta)
    return target


def recorded_cann(folder: str | Path) -> str | None:
    """The CANN release the build of ``folder`` recorded (None: none recorded).

    Example:
        >>> recorded_cann("repo/net")  # doctest: +SKIP
        '8.1.RC1'
    """
    try:
        value = read_record_data(Path(folder), MANIFEST).get("cann")
    except (OSError, ValueError):
        return None
    return value if isinstance(value, str) else None


def build_repository(
    model: str | Path,
    out_dir: str | Path,
    options: RepositoryOptions,
    force: bool = False,
    report: Callable[[str], None] | None = None,
) -> Path:
    """Write ``out_dir/<name>/{config.pbtxt, 1/model.onnx[, 1/model.py]}``; return the folder.

    An existing model folder is replaced only with ``force=True`` and only if opsdk wrote it.
    For ``ascend`` the model file is the one npu_ge can load (fallback functions embedded,
    domains and opset versions as the target CANN's GE parser needs): ``report`` gets one
    line per change. Batching npu_ge will not do is a :class:`TritonConfigWarning`.
    :func:`plan_repository` then :func:`write_repository`.

    Example:
        >>> build_repository("resnet.onnx", "repo", RepositoryOptions("resnet"))  # doctest: +SKIP
        PosixPath('repo/resnet')
    """
    return write_repository(plan_repository(model, options, report), out_dir, force, report)


def _report_copies(files: dict[str, bytes], name: str, report: Callable[[str], None]) -> None:
    """Say which operator folders were copied into the model folder (the cpu target's)."""
    folders = sorted({"/".join(Path(rel).parts[:2]) for rel in files})
    if folders:
        report(f"{name}: copied {', '.join(folders)} into the model folder (OPSDK_OPERATORS_PATH "
               "points there, so the repository runs wherever it is moved)")


MANIFEST = ".opsdk-files.json"
_LEGACY_FILES = ("config.pbtxt", "1/model.onnx", "1/model.py")  # before the manifest existed


def _ours(target: Path) -> list[str] | None:
    """The files opsdk wrote in ``target`` (from its record), or None if it did not.

    A record listing a path outside ``target`` (absolute, ``..``) is refused, naming it."""
    config = target / "config.pbtxt"
    if config.is_symlink() or not config.is_file():
        return None
    with open(config, "rb") as f:
        if b"generated by opsdk" not in f.read(4096).split(b"\n", 1)[0]:
            return None
    if not (target / MANIFEST).exists() and not (target / MANIFEST).is_symlink():
        return list(_LEGACY_FILES)
    return list(read_record(target, MANIFEST))


def _bytecode_of(ours: set[str], present: Iterable[str]) -> set[str]:
    """``__pycache__/<stem>.*.pyc`` files beside a ``.py`` opsdk wrote: the bytecode a
    server's Python compiled from it (model.py, a pipeline step's module), not a user's file."""
    found = set()
    for rel in present:
        path = PurePosixPath(rel)
        if path.parent.name == "__pycache__" and path.suffix == ".pyc":
            source = path.parent.parent / f"{path.name.split('.', 1)[0]}.py"
            if str(source) in ours:
                found.add(rel)
    return found


def _make_room(target: Path, force: bool, check_only: bool = False) -> None:
    """Remove the model folder opsdk wrote at ``target`` (``force``), never another file:
    nothing outside ``target`` and nothing through a symlink (``1/`` linked elsewhere).
    ``check_only``: raise as it would, remove nothing (a pipeline checks all its folders)."""
    if not target.exists() and not target.is_symlink():
        return
    ours = _ours(target) if target.is_dir() and not target.is_symlink() else None
    if not force:
        raise TritonConfigError(
            f"{target} already exists; pass --force to replace it"
            + ("" if ours is not None else " (opsdk did not write it, so even --force will not)")
        )
    if ours is None:
        raise TritonConfigError(
            f"{target} exists and its config.pbtxt has no opsdk banner; refusing to replace a "
            "folder opsdk did not write: remove it yourself or pick another --name / -o"
        )
    keep = {*ours, MANIFEST}
    keep |= _bytecode_of(keep, walk_files(target))
    for rel in sorted(keep):
        safe_target(target, rel, str(target / MANIFEST))  # no symlink on the way, before any delete
    foreign = [rel for rel in walk_files(target) if rel not in keep]
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        shown = ", ".join(foreign[:3]) + more
        raise TritonConfigError(
            f"{target} holds files opsdk did not write ({shown}); --force replaces only opsdk's "
            "own files: move those away or pick another --name / -o"
        )
    if check_only:
        return
    for rel in sorted(keep):
        remove_file(target, rel, str(target / MANIFEST))
    remove_empty_dirs(target)
    target.rmdir()
