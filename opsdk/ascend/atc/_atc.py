"""Plan and run CANN's ATC model conversion (``atc --framework=5``) of an ONNX model.

:func:`plan_atc` validates every argument against CANN's accepted values and the model's
graph, runs the doctor check (:mod:`opsdk.ascend.atc.doctor`) with the rules of the target
CANN release and the shapes given, checks the plugin keys of the given opsdk projects
against the model, and returns the exact command, environment and host procedure. A model
mixing the default domain with a custom one is converted from a copy whose default domain is
spelled ``ai.onnx`` on the releases whose parser needs it (E16005), as
``opsdk triton build --target ascend`` writes it. :func:`run_atc` runs it when ``atc`` is on
PATH.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._limits import INT_RANGES
from ...errors import SpecError
from ...onnx import iter_all_nodes, load_model
from ..socs import CannArgError, check_soc_version, implmodes
from ..versions import CannVersion, resolve_cann
from ._host import gear_flags, host_procedure
from ._onnx_keys import check_plugin_keys, normalize_default_domain, origin_op_types

__all__ = [
    "AtcPlan", "plan_atc", "run_atc", "parse_input_shape", "atc_executable", "project_plugin_keys",
    "write_model_copy", "write_aipp_config",
]

_DIM = re.compile(r"^(-1|\d+|\d+~\d+)$")


@dataclass
class AtcPlan:
    """The ATC command, the environment it needs and everything checked on the way."""

    command: list[str]
    env: dict[str, str]
    notes: list[str] = field(default_factory=list)
    findings: list[dict[str, str]] = field(default_factory=list)
    blocking: list[str] = field(default_factory=list)
    #: the CANN release whose rules applied
    cann: str = ""
    #: shell lines an NPU host runs, in order (toolkit env, operator packages, atc)
    procedure: list[str] = field(default_factory=list)
    #: where the domain-normalised copy ATC converts goes (None: ATC reads the model itself)
    model_copy: str | None = None
    copy_proto: Any = field(default=None, repr=False)
    #: the AIPP config ATC reads (--insert_op_conf), and where it goes
    aipp_config: str | None = None
    aipp_config_path: str | None = None

    @property
    def shell(self) -> str:
        """The command as one shell line, environment first."""
        pre = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return (pre + " " if pre else "") + shlex.join(self.command)

    def as_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "env": self.env,
            "shell": self.shell,
            "notes": self.notes,
            "findings": self.findings,
            "blocking": self.blocking,
            "cann": self.cann,
            "procedure": self.procedure,
            "model_copy": self.model_copy,
            "aipp_config_path": self.aipp_config_path,
        }


def atc_executable() -> str | None:
    """Path of ``atc`` on PATH, or None."""
    return shutil.which("atc")


_INT64_MAX = INT_RANGES["int64"][1]


def parse_input_shape(text: str) -> dict[str, list[str]]:
    """Parse ATC's ``--input_shape`` syntax: ``"x:1,3,224,224;mask:-1,8"``.

    A dim is an int, ``-1`` (dynamic) or a range ``lo~hi``.

    Example:
        >>> parse_input_shape("x:1,3,224,224;y:1~8,-1")
        {'x': ['1', '3', '224', '224'], 'y': ['1~8', '-1']}
    """
    shapes: dict[str, list[str]] = {}
    for part in [p.strip() for p in text.split(";") if p.strip()]:
        name, sep, dims_text = part.rpartition(":")
        if not sep or not name:
            raise CannArgError(
                f"--input-shape entry {part!r} must be NAME:D1,D2,... (e.g. x:1,3,224,224)"
            )
        dims = [d.strip() for d in dims_text.split(",")] if dims_text.strip() else []
        for d in dims:
            if not _DIM.match(d):
                raise CannArgError(
                    f"--input-shape {name!r}: dim {d!r} is not an int, -1 or a range lo~hi"
                )
            if any(int(v) > _INT64_MAX for v in d.split("~")):
                raise CannArgError(f"--input-shape {name!r}: dim {d!r} is beyond int64 "
                                   f"({_INT64_MAX}); give the size the model runs at")
            if "~" in d and int(d.split("~")[0]) > int(d.split("~")[1]):
                raise CannArgError(f"--input-shape {name!r}: range {d!r} has lo > hi")
        if name in shapes:
            raise CannArgError(f"--input-shape names {name!r} twice")
        shapes[name] = dims
    if not shapes:
        raise CannArgError("--input-shape is empty; use NAME:D1,D2,...[;NAME2:...]")
    return shapes


def _graph_inputs(model: Any) -> dict[str, list[int | str | None]]:
    """Input dims by name; dim_value -1/0 (as exporters write dynamic dims) reads as None."""
    from ...onnx import input_dims

    inits = {t.name for t in model.graph.initializer}
    return {
        vi.name: input_dims(vi) or []
        for vi in model.graph.input
        if vi.name not in inits
    }


def _example_dims(dims: Sequence[int | str | None]) -> str:
    """An --input-shape value: the fixed dims, 1 for dynamic ones (``1,...`` for no rank)."""
    return ",".join(str(d) if isinstance(d, int) else "1" for d in dims) if dims else "1,..."


def _check_dims(name: str, given: list[str], have: list[int | str | None]) -> None:
    if have and len(given) != len(have):
        raise CannArgError(
            f"--input-shape {name!r} has rank {len(given)} but the model's input has rank "
            f"{len(have)} (shape {have}); give {len(have)} dims"
        )
    for i, (g, h) in enumerate(zip(given, have, strict=False)):
        if isinstance(h, int) and h > 0 and g != str(h):
            raise CannArgError(
                f"--input-shape {name!r}: dim {i} is {g} but the model fixes it to {h}; "
                f"use {h} there or export the model with a dynamic dim"
            )


def _validate_shapes(model: Any, shapes: Mapping[str, list[str]] | None) -> list[str]:
    inputs = _graph_inputs(model)
    notes = []
    for name, dims in (shapes or {}).items():
        if name not in inputs:
            raise CannArgError(
                f"--input-shape names {name!r}, which is not a graph input; inputs are: "
                f"{', '.join(inputs) or 'none'}"
            )
        _check_dims(name, dims, inputs[name])
    missing = [n for n, d in inputs.items() if any(not isinstance(x, int) or x <= 0 for x in d)]
    missing = [n for n in missing if n not in (shapes or {})]
    if missing:
        from ...onnx import runnable_shapes

        runs = runnable_shapes(model) or {}
        raise CannArgError(
            f"graph input(s) {', '.join(missing)} have dynamic dims and no --input-shape; "
            'ATC needs a shape per input, e.g. --input-shape "'
            + ";".join(f"{n}:{_example_dims(runs.get(n) or inputs[n])}" for n in missing)
            + ('" (a shape ONNX Runtime runs the model on' if runs else
               '" (1 where the model leaves a dim dynamic')
            + "; -1 or lo~hi asks for a dynamic shape)"
        )
    if shapes and any("-1" in d or any("~" in x for x in d) for d in shapes.values()):
        notes.append("dynamic dims (-1 or lo~hi) ask ATC for a dynamic-shape model")
    return notes


def _doctor_shapes(shapes: Mapping[str, list[str]] | None) -> dict[str, list[int]]:
    """ATC's shapes as the doctor takes them: a range by its upper bound, -1 by 1 (the rank
    and the fact that ATC is given a shape are what the doctor checks)."""
    return {name: [int(d.split("~")[-1]) if d != "-1" else 1 for d in dims]
            for name, dims in (shapes or {}).items()}


def _doctor(
    model: Any, cann: CannVersion, shapes: Mapping[str, list[str]] | None
) -> tuple[list[dict[str, str]], list[str], list[str]]:
    """(findings, blocking messages, notes) of :func:`opsdk.ascend.atc.doctor.diagnose`
    with the rules of ``cann`` and the shapes ATC is given."""
    from .doctor import diagnose

    findings, blocking = [], []
    for f in diagnose(model, cann=str(cann), input_shapes=_doctor_shapes(shapes)):
        level = str(getattr(f, "severity", getattr(f, "level", "info"))).lower()
        msg = str(getattr(f, "message", f))
        findings.append({"severity": level, "message": msg})
        if level in ("error", "fatal"):
            blocking.append(f"doctor: {msg}")
    return findings, blocking, []


def _custom_opp_env(custom_opp: Sequence[str | Path]) -> dict[str, str]:
    dirs = []
    for d in custom_opp:
        p = Path(d).resolve()
        if not p.is_dir() or not any(
            (p / s).exists() for s in ("op_proto", "framework", "op_impl")
        ):
            raise CannArgError(
                f"--custom-opp {d}: not an installed operator package (a vendors/<name> folder "
                "with "
                "op_proto/, op_impl/ or framework/); install build_out/custom_opp_*.run first"
            )
        dirs.append(str(p))
    if not dirs:
        return {}
    old = os.environ.get("ASCEND_CUSTOM_OPP_PATH", "")
    return {"ASCEND_CUSTOM_OPP_PATH": ":".join(dirs + ([old] if old else []))}


def project_plugin_keys(projects: Sequence[str | Path]) -> dict[str, list[str]]:
    """``{op_type: [OriginOpType keys]}`` the plugins of ``opsdk cann`` projects register.

    Example:
        >>> project_plugin_keys(["build/cann/my_op"])  # doctest: +SKIP
        {'MyOp': ['com.example::1::MyOp']}
    """
    from ..project._project import read_project_manifest

    keys: dict[str, list[str]] = {}
    for prj in projects:
        man = read_project_manifest(prj)
        if not man:
            raise CannArgError(
                f"--op-project {prj}: no opsdk manifest; pass a folder written by `opsdk cann`"
            )
        for op in man.get("ops") or [man]:
            name, found = _manifest_keys(Path(prj), op)
            keys.setdefault(name, []).extend(found)
    return keys


def _manifest_keys(prj: Path, man: dict[str, Any]) -> tuple[str, list[str]]:
    """The operator and its plugin keys from a project manifest, each checked against the
    key grammar (a hand-edited or foreign manifest is refused naming the file)."""
    from .._op import check_origin_op_type
    from ..project._project import MANIFEST

    where = f"--op-project {prj}: {prj / MANIFEST}"
    op, found = man.get("op"), man.get("origin_op_types", [])
    if not isinstance(op, str) or not isinstance(found, list):
        raise CannArgError(f"{where} has no operator name or key list; regenerate the project "
                           "with `opsdk cann`")
    return op, [check_origin_op_type(k, f"{where}: key") for k in found]


def _precision_flags(
    mode: str | None, keep_dtype: str | Path | None, modify_mixlist: str | Path | None
) -> tuple[list[str], list[str]]:
    """ATC's flags for a precision setting, and notes; the list files are checked."""
    from ..precision import MODE_CHOICES, PrecisionMode

    _check_choice(mode, MODE_CHOICES, "--precision-mode")
    if not mode:
        if keep_dtype or modify_mixlist:
            raise CannArgError("--keep-dtype and --modify-mixlist adjust a precision mode; "
                               "add --precision-mode (e.g. allow_mix_precision)")
        return [], []
    try:
        pm = PrecisionMode.from_atc(mode, keep_dtype, modify_mixlist)
    except SpecError as e:
        raise CannArgError(str(e)) from None
    flags, notes = list(pm.atc_flags), []
    if modify_mixlist:
        if not pm.behaves_as.startswith("allow_mix_precision"):
            raise CannArgError(
                f"--modify-mixlist applies to the mixed-precision modes (allow_mix_precision*, "
                f"mixed_float16, mixed_bfloat16), not {mode}"
            )
        flags.append(f"--modify_mixlist={modify_mixlist}")
    if keep_dtype:
        flags.append(f"--keep_dtype={keep_dtype}")
        if pm.behaves_as == "must_keep_origin_dtype":
            notes.append(f"--keep_dtype has no effect under {mode}: every dtype is kept")
    return flags, notes


def _check_precision_lists(model: Any, path: Path, mode: str | None,
                           keep_dtype: str | Path | None,
                           modify_mixlist: str | Path | None) -> None:
    """Refuse ``--keep_dtype`` lines and ``--modify_mixlist`` entries that name no node or
    op type of the model (ATC ignores them silently)."""
    if not mode or not (keep_dtype or modify_mixlist):
        return
    from ...onnx import iter_all_nodes
    from ..model_precision._assign import check_names
    from ..model_precision._entries import check_list_entries
    from ..precision import PrecisionMode

    pm = PrecisionMode.from_atc(mode, keep_dtype, modify_mixlist)
    nodes = list(iter_all_nodes(model.graph))
    try:
        check_names(nodes, pm, str(path))
        check_list_entries(nodes, pm, str(path), keep_file=keep_dtype, mix_file=modify_mixlist)
    except SpecError as e:
        raise CannArgError(str(e)) from None


def _check_choice(value: str | None, allowed: Sequence[str], flag: str) -> None:
    if value is not None and value not in allowed:
        raise CannArgError(
            f"{flag} {value!r} is not accepted by ATC; use one of {', '.join(allowed)}"
        )


def plan_atc(
    model_path: str | Path,
    *,
    soc_version: str,
    output: str | Path,
    input_shape: str | None = None,
    precision_mode: str | None = None,
    op_select_implmode: str | None = None,
    keep_dtype: str | Path | None = None,
    modify_mixlist: str | Path | None = None,
    custom_opp: Sequence[str | Path] = (),
    op_projects: Sequence[str | Path] = (),
    skip_doctor: bool = False,
    cann: str = "auto",
    dynamic_dims: str | None = None,
    soc_as_written: bool = False,
    buffer_optimize: str | None = None,
    static_memory_policy: int | None = None,
    aipp: str | Path | Any = None,
) -> AtcPlan:
    """Validate the arguments and build the ATC command (see the module docstring).

    ``cann``: the host's CANN release (``auto``: the installed toolkit's, else the default),
    whose parser rules the doctor and the key check apply; ``dynamic_dims``: ATC shape gears,
    one value per ``-1`` dim of ``input_shape`` each (``"1,224;8,448"``); ``soc_as_written``
    takes an ambiguous SoC version (``Ascend910B``) as CANN's platform config spells it;
    ``buffer_optimize`` and ``static_memory_policy``: see :mod:`opsdk.ascend.atc._memory`
    (the policy is not an ATC flag: the plan sets it for the application that runs the .om);
    ``aipp``: a preprocessing declaration (a TOML file or an :class:`opsdk.preprocess.Preprocess`)
    whose AIPP config ATC reads (``--insert_op_conf``), checked against ATC's rules, after the
    model fed by the AIPP emulator is compared with the model fed by the CPU step.

    Example:
        >>> plan = plan_atc("model.onnx", soc_version="Ascend910B3", output="out")  # doctest: +SKIP
        >>> plan.command[:2]  # doctest: +SKIP
        ['atc', '--framework=5']
    """
    path = Path(model_path)
    if not path.is_file():
        raise CannArgError(f"model {model_path} does not exist; pass the path of an .onnx file")
    check_soc_version(soc_version, soc_as_written)
    precision, precision_notes = _precision_flags(precision_mode, keep_dtype, modify_mixlist)
    _check_choice(op_select_implmode, implmodes(), "--op-select-implmode")
    model = load_model(path, external_data=False)  # ModelError naming it if unreadable
    _check_precision_lists(model, path, precision_mode, keep_dtype, modify_mixlist)
    shapes = parse_input_shape(input_shape) if input_shape else None
    notes = _validate_shapes(model, shapes) + precision_notes
    version = resolve_cann(cann).version
    gears = gear_flags(shapes or {}, dynamic_dims) if dynamic_dims else []
    if gears:
        gear_note = f"the -1 dims take the gears of --dynamic-dims ({dynamic_dims})"
        notes = [gear_note if n.startswith("dynamic dims (-1") else n for n in notes]
    converted, copy_path = _domain_copy(model, path, version)
    if copy_path is not None:
        notes.append(f"the model mixes the default domain with a custom one, which CANN "
                     f"{version}'s parser rejects (E16005): ATC converts {copy_path}, a copy "
                     "whose default domain is spelled ai.onnx")
    out = str(output)
    if out.endswith(".om"):
        out = out[:-3]
        notes.append("ATC appends .om itself; --output given without it")
    cmd = [
        "atc",
        "--framework=5",
        f"--model={copy_path or path}",
        f"--output={out}",
        f"--soc_version={soc_version}",
    ]
    if input_shape:
        cmd.append(f"--input_shape={input_shape}")
    cmd.extend(gears)
    cmd.extend(precision)
    if op_select_implmode:
        cmd.append(f"--op_select_implmode={op_select_implmode}")
    memory = _memory_plan(buffer_optimize, static_memory_policy, shapes, bool(gears))
    cmd.extend(memory.flags)
    notes.extend(memory.notes)
    aipp_text, aipp_path, aipp_check = _aipp_plan(aipp, model, shapes, soc_version, out)
    if aipp_path:
        cmd.append(f"--insert_op_conf={aipp_path}")
    plan = AtcPlan(cmd, _custom_opp_env(custom_opp), notes, cann=str(version),
                   model_copy=None if copy_path is None else str(copy_path),
                   copy_proto=converted if copy_path is not None else None)
    if skip_doctor:
        plan.notes.append("doctor check skipped (--skip-doctor)")
    else:
        plan.findings, plan.blocking, more = _doctor(converted, version, shapes)
        plan.notes.extend(more)
    plan.findings += [{"severity": f.severity, "message": f.message} for f in memory.findings]
    plan.aipp_config, plan.aipp_config_path = aipp_text, aipp_path
    if aipp_check is not None:
        (plan.notes if aipp_check.passed else plan.blocking).append(aipp_check.summary())
    keys = project_plugin_keys(op_projects)
    for problem in check_plugin_keys(converted, keys, version):
        plan.blocking.append(f"plugin keys: {problem.message}")
    projects = {op: str(prj) for prj in op_projects for op in project_plugin_keys([prj])}
    plan.procedure = host_procedure(cmd, plan.env, origin_op_types(converted), projects,
                                    [str(d) for d in custom_opp], str(path)) + memory.runtime
    return plan


@dataclass
class _MemoryPlan:
    flags: list[str]
    notes: list[str]
    findings: list[Any]
    runtime: list[str]


def _memory_plan(buffer_optimize: str | None, policy: int | None,
                 shapes: Mapping[str, list[str]] | None, gears: bool) -> _MemoryPlan:
    """ATC's --buffer_optimize, the static-memory policy for the .om's runtime, and the
    doctor's warnings about them (:mod:`opsdk.ascend.atc._memory`)."""
    from ._memory import (
        GE_STATIC_MEMORY_ENV,
        STATIC_MEMORY_POLICIES,
        MemoryOptions,
        check_memory_options,
        memory_findings,
    )

    try:
        check_memory_options(buffer_optimize, policy)
    except ValueError as e:
        raise CannArgError(str(e)) from None
    dynamic = not gears and any(d == "-1" or "~" in d for dims in (shapes or {}).values()
                                for d in dims)
    found = memory_findings(MemoryOptions(buffer_optimize, policy, dynamic, gears))
    out = _MemoryPlan([], [], found, [])
    if buffer_optimize is not None:
        out.flags.append(f"--buffer_optimize={buffer_optimize}")
    if policy is not None:
        out.notes.append(
            f"static memory policy {policy} ({STATIC_MEMORY_POLICIES[policy]}) is not an ATC "
            f"flag: GE reads {GE_STATIC_MEMORY_ENV} when the application runs the .om")
        out.runtime = ["# when the application runs the .om (GE reads it at run time):",
                       f"export {GE_STATIC_MEMORY_ENV}={policy}"]
    return out


def _domain_copy(model: Any, path: Path, cann: CannVersion) -> tuple[Any, Path | None]:
    """The model ATC converts, and where its copy goes when it is not the file itself: a
    default-domain node next to a custom domain fails the parsers through CANN 9.1."""
    imported = {o.domain for o in model.opset_import}
    mixed = "" in imported and len(imported) > 1 and any(
        n.domain == "" for n in iter_all_nodes(model.graph))
    if not mixed or not cann.rejects_mixed_default_domain:
        return model, None
    return normalize_default_domain(model), path.with_name(f"{path.stem}.atc.onnx")


def _write_generated(target: Path, data: bytes, force: bool, what: str) -> Path:
    """Write a file the plan needs, refusing to replace a different file without ``force``."""
    from ..._written import write_file

    if target.exists() and not force and target.read_bytes() != data:
        raise CannArgError(f"{target} exists and is not the {what} ATC needs now; remove it "
                           "or pass --force")
    return write_file(target.parent, target.name, data)


def write_model_copy(plan: AtcPlan, force: bool = False) -> Path | None:
    """Write the domain-normalised copy the plan's command converts (if it has one).

    Raises:
        CannArgError: the copy's path holds another file and ``force`` is not set.

    Example:
        >>> plan = plan_atc("m.onnx", soc_version="Ascend910B3", output="o")  # doctest: +SKIP
        >>> write_model_copy(plan)  # doctest: +SKIP
        PosixPath('m.atc.onnx')
    """
    if plan.model_copy is None:
        return None
    return _write_generated(Path(plan.model_copy), plan.copy_proto.SerializeToString(), force,
                            "copy")


def write_aipp_config(plan: AtcPlan, force: bool = False) -> Path | None:
    """Write the plan's AIPP config (``--insert_op_conf``), if it has one.

    Raises:
        CannArgError: the path holds another file and ``force`` is not set.

    Example:
        >>> plan = plan_atc("m.onnx", soc_version="Ascend310P3", output="o",
        ...                 aipp="preprocess.toml")  # doctest: +SKIP
        >>> write_aipp_config(plan)  # doctest: +SKIP
        PosixPath('o.insert_op.cfg')
    """
    if plan.aipp_config is None or plan.aipp_config_path is None:
        return None
    return _write_generated(Path(plan.aipp_config_path), plan.aipp_config.encode(), force,
                            "AIPP config")


def _aipp_plan(aipp: Any, model: Any, shapes: Mapping[str, list[str]] | None, soc: str,
               out: str) -> tuple[str | None, str | None, Any]:
    """(cfg text, its path, the emulator-vs-CPU check) for a declaration, else Nones."""
    if aipp is None:
        return None, None, None
    from ...preprocess import Preprocess, load_preprocess
    from .aipp import check_aipp_model, render_insert_op_cfg

    p = aipp if isinstance(aipp, Preprocess) else load_preprocess(aipp)
    inputs = _graph_inputs(model)
    name = p.input or next(iter(inputs), None)
    if name not in inputs:
        raise CannArgError(f"{p.source}: field 'input' names {name!r}, which is not a graph "
                           f"input; inputs are: {', '.join(inputs) or 'none'}")
    text = render_insert_op_cfg(p, soc=soc, model_dims=inputs[name],
                                given=(shapes or {}).get(name), rank=list(inputs).index(name),
                                input_name=name)
    return text, f"{out}.insert_op.cfg", check_aipp_model(model, p, name)


def run_atc(plan: AtcPlan, atc: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the planned command with its environment; output is captured."""
    exe = atc or atc_executable()
    if exe is None:
        raise CannArgError("atc is not on PATH; source <CANN toolkit>/set_env.sh")
    env = dict(os.environ, **plan.env)
    return subprocess.run([exe, *plan.command[1:]], env=env, capture_output=True, text=True)
