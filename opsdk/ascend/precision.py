"""Emulating ATC's ``--precision_mode`` / ``--precision_mode_v2`` on the CPU.

ATC decides per operator which kernel dtype runs for the model's float tensors. The
rules below are those of CANN's ATC documentation (``--precision_mode``,
``--precision_mode_v2``, ``--modify_mixlist``, ``--keep_dtype``); a spec says whether
the operator is a vector or a matrix (cube) operator (``OpSpec(compute=...)``), which
several modes treat differently:

* ``force_fp16`` (v2 ``fp16``): float16 whenever the operator has a float16 kernel.
* ``allow_fp32_to_fp16``: cube operators run in float16; vector operators keep float32
  when they have a float32 kernel, else float16. ``allow_fp32_to_bf16`` likewise with
  bfloat16.
* ``must_keep_origin_dtype`` (v2 ``origin``): the model's dtype; a float16 operator
  without a float16 kernel runs in float32; no kernel at all is an error (ATC would need
  an AI CPU kernel).
* ``force_fp32`` = ``cube_fp16in_fp32out`` (v1 and v2): vector operators given float16
  or bfloat16 run in float32 when they can; cube operators prefer float16 inputs with a
  float32 output, then float32, then float16.
* ``allow_mix_precision`` = ``allow_mix_precision_fp16`` (v2 ``mixed_float16``) and
  ``allow_mix_precision_bf16`` (v2 ``mixed_bfloat16``): lowering follows the operator's
  list: white (``precision_reduce`` true) lowers float32, black keeps it, gray follows
  the upstream operator. opsdk's ops-info sets no flag, so an opsdk operator is gray;
  alone in a graph its upstream is the model input, so its dtype is kept.
  ``--modify_mixlist`` moves it to the white or black list.
* ``--keep_dtype``: a listed operator keeps the model's dtype (not under ``origin``).

When the chosen kernel dtype differs from the model's, opsdk casts the inputs to it,
runs that kernel, casts the outputs back to the model's dtype (NumPy: IEEE round to
nearest even, overflow to Inf) and judges them against the float64 reference of the
original inputs under the standard of the lowest float precision involved.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._text import read_text
from ..dtypes import to_numpy
from ..errors import SpecError
from ..spec import OpSpec

__all__ = [
    "PRECISION_MODES",
    "PRECISION_MODES_V2",
    "MODE_CHOICES",
    "PrecisionMode",
    "kernel_dtypes",
    "emulate",
    "read_keep_dtype",
    "read_keep_dtype_file",
    "read_mixlist",
]

#: ``--precision_mode`` values (ATC's names).
PRECISION_MODES: tuple[str, ...] = (
    "force_fp32",
    "cube_fp16in_fp32out",
    "force_fp16",
    "allow_fp32_to_fp16",
    "must_keep_origin_dtype",
    "allow_mix_precision",
    "allow_mix_precision_fp16",
    "allow_mix_precision_bf16",
    "allow_fp32_to_bf16",
)
#: ``--precision_mode_v2`` values and the ``--precision_mode`` value they behave as.
PRECISION_MODES_V2: dict[str, str] = {
    "fp16": "force_fp16",
    "origin": "must_keep_origin_dtype",
    "cube_fp16in_fp32out": "force_fp32",
    "mixed_float16": "allow_mix_precision_fp16",
    "mixed_bfloat16": "allow_mix_precision_bf16",
}
#: Every name ``--opsdk-precision-mode`` takes (both ATC options' values).
MODE_CHOICES: tuple[str, ...] = tuple(dict.fromkeys([*PRECISION_MODES, *PRECISION_MODES_V2]))
_SAME = {"cube_fp16in_fp32out": "force_fp32", "allow_mix_precision": "allow_mix_precision_fp16"}
_FLOATS = ("float16", "bfloat16", "float32")
_LISTS = ("black-list", "white-list")
_RANK = {"float16": 0, "bfloat16": 0, "float32": 1, "float64": 2}


@dataclass(frozen=True)
class PrecisionMode:
    """An ATC precision setting: the mode and the operator lists that adjust it.

    ``keep_dtype``: op types whose dtype ``--keep_dtype`` keeps. ``white`` / ``black``:
    op types ``--modify_mixlist`` moves to the white or black list (others stay gray).
    ``keep_nodes``: node names ``--keep_dtype`` keeps (a model's nodes; a single-operator
    test has none).

    Example:
        >>> PrecisionMode("mixed_float16").behaves_as
        'allow_mix_precision_fp16'
    """

    mode: str
    keep_dtype: frozenset[str] = frozenset()
    white: frozenset[str] = frozenset()
    black: frozenset[str] = frozenset()
    keep_nodes: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.mode not in MODE_CHOICES:
            raise SpecError(f"unknown precision mode {self.mode!r}; expected one of "
                            f"{', '.join(MODE_CHOICES)} (mixed_hif8 is not emulated: opsdk "
                            "has no hif8 dtype)")

    @property
    def behaves_as(self) -> str:
        """The ``--precision_mode`` rule this setting follows."""
        m = PRECISION_MODES_V2.get(self.mode, self.mode)
        return _SAME.get(m, m)

    @property
    def atc_flags(self) -> list[str]:
        """The mode as ATC takes it (list files are passed by the user as written)."""
        flag = "--precision_mode" if self.mode in PRECISION_MODES else "--precision_mode_v2"
        return [f"{flag}={self.mode}"]

    def mixlist(self, op_type: str) -> str:
        """``white``, ``black`` or ``gray``: the op's list under ``--modify_mixlist``."""
        return "black" if op_type in self.black else "white" if op_type in self.white else "gray"

    @classmethod
    def from_atc(cls, mode: str, keep_dtype: str | Path | None = None,
                 modify_mixlist: str | Path | None = None) -> PrecisionMode:
        """The setting of ``--precision_mode[_v2]=mode --keep_dtype=F --modify_mixlist=F``."""
        white, black = read_mixlist(modify_mixlist) if modify_mixlist else (set(), set())
        nodes, keep = read_keep_dtype_file(keep_dtype) if keep_dtype else (set(), set())
        return cls(mode, frozenset(keep), frozenset(white), frozenset(black), frozenset(nodes))


def read_keep_dtype(path: str | Path) -> set[str]:
    """Op types listed in a ``--keep_dtype`` file (``OpType::Name`` lines; bare lines are
    node names, which a single-operator test has none of, so they are ignored).

    Example:
        >>> read_keep_dtype("keep.cfg")  # a file with the line OpType::MyOp  # doctest: +SKIP
        {'MyOp'}
    """
    return read_keep_dtype_file(path)[1]


def read_keep_dtype_file(path: str | Path) -> tuple[set[str], set[str]]:
    """(node names, op types) a ``--keep_dtype`` file lists: one per line, op types as
    ``OpType::Name``; blank lines and ``#`` comments are skipped.

    Example:
        >>> read_keep_dtype_file("keep.cfg")  # lines conv_3 and OpType::SoftmaxV2  # doctest: +SKIP
        ({'conv_3'}, {'SoftmaxV2'})
    """
    p = Path(path)
    if not p.is_file():
        what = "is a folder, not a file" if p.is_dir() else "does not exist"
        raise SpecError(f"--keep_dtype file {p} {what}; write it (one node name or "
                        "OpType::Type per line) or drop --keep-dtype")
    text = read_text(p, "--keep_dtype file", error=SpecError)
    nodes, types = set(), set()
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("OpType::"):
            types.add(line[len("OpType::"):].strip())
        elif line and not line.startswith("#"):
            nodes.add(line)
    return nodes, types


def read_mixlist(path: str | Path) -> tuple[set[str], set[str]]:
    """(white, black) op types a ``--modify_mixlist`` JSON file moves there.

    ``{"black-list": {"to-add": [...], "to-remove": [...]}, "white-list": {...}}``;
    ``to-remove`` moves an op back to the gray list (where an opsdk operator starts).
    An op added to both lists is an error.

    Example:
        >>> read_mixlist("ops_info.json")  # {"white-list": {"to-add": ["MyOp"]}}  # doctest: +SKIP
        ({'MyOp'}, set())
    """
    p = Path(path)
    text = read_text(p, "--modify_mixlist file", error=SpecError)
    try:
        data = json.loads(text)
    except ValueError as e:
        raise SpecError(f"--modify_mixlist file {p}: not JSON ({e}); write e.g. "
                        '{"black-list": {"to-add": ["Softmax"]}}') from None
    if not isinstance(data, dict) or not set(data) <= set(_LISTS):
        got = sorted(data) if isinstance(data, dict) else data
        raise SpecError(f"--modify_mixlist file {p}: expected an object with the keys "
                        f"{' and '.join(_LISTS)}, got {got!r}")
    lists = {n: _mixlist_ops(p, n, data.get(n, {}), "to-add")
             - _mixlist_ops(p, n, data.get(n, {}), "to-remove") for n in _LISTS}
    both = lists["white-list"] & lists["black-list"]
    if both:
        raise SpecError(f"--modify_mixlist file {p}: {', '.join(sorted(both))} added to both "
                        "black-list and white-list; keep one")
    return lists["white-list"], lists["black-list"]


def _mixlist_ops(p: Path, name: str, entry: Any, key: str) -> set[str]:
    """The op types of ``entry[key]``: a list of strings (a bare string would be its letters)."""
    if not isinstance(entry, dict) or not set(entry) <= {"to-add", "to-remove"}:
        raise SpecError(f"--modify_mixlist file {p}: {name!r} must be an object with the keys "
                        f"to-add and to-remove, got {entry!r}")
    ops = entry.get(key, [])
    if not isinstance(ops, list) or not all(isinstance(o, str) and o for o in ops):
        raise SpecError(f"--modify_mixlist file {p}: {name}.{key} must be a list of op type "
                        f"names, e.g. [\"Conv2D\"], got {ops!r}")
    return set(ops)


def _as_mode(mode: str | PrecisionMode) -> PrecisionMode:
    return mode if isinstance(mode, PrecisionMode) else PrecisionMode(mode)


def _swap(dtypes: Sequence[str | None], to: str) -> tuple[str | None, ...]:
    return tuple(to if d in _FLOATS else d for d in dtypes)


class _Kernels:
    """The operator's registered kernels: input dtype combinations and their outputs."""

    def __init__(self, spec: OpSpec) -> None:
        self.spec = spec
        self.combos = {tuple(c) for c in spec.dtype_combinations()}

    def has(self, ds: Sequence[str | None]) -> bool:
        return any(all(d is None or d == k for d, k in zip(ds, c, strict=False))
                   for c in self.combos)

    def outputs(self, ds: Sequence[str | None]) -> list[str]:
        binding = self.spec.bind_types(list(ds))
        return [self.spec.output_dtype(o, binding) for o in self.spec.outputs]

    def first(self, *candidates: Sequence[str | None]) -> tuple[str | None, ...] | None:
        return next((tuple(c) for c in candidates if self.has(c)), None)


def _cube_fp32_out(k: _Kernels, ds: tuple[str | None, ...]) -> tuple[str | None, ...] | None:
    fp16 = _swap(ds, "float16")
    if k.has(fp16) and "float32" in k.outputs(fp16):
        return fp16
    return k.first(_swap(ds, "float32"), fp16)


def _choose(k: _Kernels, ds: tuple[str | None, ...], pm: PrecisionMode
            ) -> tuple[str | None, ...] | None:
    mode, cube = pm.behaves_as, k.spec.compute == "cube"
    low = "bfloat16" if mode in ("allow_fp32_to_bf16", "allow_mix_precision_bf16") else "float16"
    fp32, lowered = _swap(ds, "float32"), _swap(ds, low)
    if mode == "force_fp16":
        return k.first(lowered, ds, fp32)
    if mode == "must_keep_origin_dtype":
        return k.first(ds, fp32) if "float16" in ds else k.first(ds)
    if mode == "force_fp32":
        return _cube_fp32_out(k, ds) if cube else k.first(fp32, ds)
    # The remaining modes lower float32 only; a float16/bfloat16 operator without a kernel
    # in its own dtype is raised to float32, as under must_keep_origin_dtype.
    if mode in ("allow_fp32_to_fp16", "allow_fp32_to_bf16"):
        return k.first(lowered, ds, fp32) if cube else k.first(ds, lowered, fp32)
    if "float32" not in ds:
        return k.first(ds, fp32)
    if pm.mixlist(k.spec.name) == "white":
        return k.first(lowered, ds)
    return k.first(ds, lowered)  # black keeps float32; gray follows the model input


def kernel_dtypes(
    spec: OpSpec, dtypes: Sequence[str | None], mode: str | PrecisionMode
) -> tuple[str | None, ...]:
    """The input dtypes of the kernel ATC would pick for the model's input ``dtypes``.

    Raises SpecError when ATC would reject the model under ``mode`` (no kernel it may
    pick on the AI Core).

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output
        >>> s = OpSpec("A", domain="com.x", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": ("float16", "float32")})
        >>> kernel_dtypes(s, ("float32",), "force_fp16")
        ('float16',)
        >>> kernel_dtypes(s, ("float32",), "allow_fp32_to_fp16")
        ('float32',)
        >>> kernel_dtypes(s, ("float16",), "cube_fp16in_fp32out")
        ('float32',)
    """
    pm, ds = _as_mode(mode), tuple(dtypes)
    if not any(d in _FLOATS for d in ds):
        return ds
    if spec.name in pm.keep_dtype and pm.behaves_as != "must_keep_origin_dtype":
        k = _Kernels(spec)
        if k.has(ds):
            return ds
    chosen = _choose(_Kernels(spec), ds, pm)
    if chosen is None:
        raise SpecError(
            f"{spec.name}: under {pm.atc_flags[0]} ATC finds no AI Core kernel for inputs "
            f"{'/'.join(filter(None, ds))} (kernels: {sorted(spec.dtype_combinations())}); "
            "declare the dtype in spec.py types or use another mode"
        )
    return chosen


def _lowest(dtypes: Iterable[str | None]) -> str:
    floats = [d for d in dtypes if d in _RANK]
    return min(floats, key=lambda d: _RANK[d]) if floats else "float32"


def emulate(
    spec: OpSpec, dtypes: Sequence[str | None], inputs: Sequence[np.ndarray | None],
    mode: str | PrecisionMode,
) -> tuple[list[np.ndarray | None] | None, dict[str, str] | None, str]:
    """(kernel inputs, judge dtype per output, note) of one case under ``mode``.

    The kernel inputs are None when the kernel runs in the model's own dtypes.

    Example:
        >>> # see tests/ascend/test_precision_modes.py
    """
    pm = _as_mode(mode)
    kd = kernel_dtypes(spec, dtypes, pm)
    setting = " ".join(pm.atc_flags)
    if kd == tuple(dtypes):
        return None, None, f"{setting}: the kernel runs in {'/'.join(filter(None, kd))}"
    with np.errstate(all="ignore"):
        kin = [None if a is None or d is None else a.astype(to_numpy(d))
               for a, d in zip(inputs, kd, strict=False)]
    k = _Kernels(spec)
    outs, model_outs = k.outputs(kd), k.outputs(list(dtypes))
    judge = {o.name: _lowest([*kd, dt, mdt]) if mdt in _RANK else mdt
             for o, dt, mdt in zip(spec.outputs, outs, model_outs, strict=True)}
    note = (
        f"{setting}: inputs {'/'.join(filter(None, dtypes))} cast to "
        f"{'/'.join(filter(None, kd))}, that kernel runs (outputs {'/'.join(outs)}), outputs "
        "cast back to the model's dtype and judged against the float64 reference by the "
        f"{'/'.join(sorted(set(judge.values())))} standard"
    )
    return kin, judge, note

