"""``replace(module)``: swap standard PyTorch layers and functions for opsdk operators where
the semantics match, and say what was swapped and what was left, with the reason.

Layers (swapped in place): ``nn.GELU`` -> Gelu, ``nn.LayerNorm`` -> LayerNormalization,
``nn.Softmax`` -> Softmax. Functions (through ``torch.fx``; the module then comes back as a
``GraphModule``): ``F.softmax`` / ``torch.softmax`` -> Softmax, ``F.grid_sample`` ->
GridSample. The PyTorch-side counterpart of ``opsdk rewrite --replace``.

Example:
    >>> model, report = replace(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU()))
    ... # doctest: +SKIP
    >>> print(report)  # doctest: +SKIP
    swapped 1, left 0
      swapped 1: nn.GELU -> com.opsdk::Gelu (approximate='none')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ReplaceReport", "replace"]

_DOMAIN = "com.opsdk"


@dataclass
class ReplaceReport:
    """What :func:`replace` swapped and left: (where, what, detail or reason) each."""

    swapped: list[tuple[str, str, str]] = field(default_factory=list)
    left: list[tuple[str, str, str]] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"swapped {len(self.swapped)}, left {len(self.left)}"]
        lines += [f"  swapped {w}: {what} -> {d}" for w, what, d in self.swapped]
        lines += [f"  left {w}: {what}: {d}" for w, what, d in self.left]
        return "\n".join(lines)


def _op(name: str) -> Any:
    from ._register import register

    return register(f"{_DOMAIN}::{name}").packet


def _modules() -> dict[str, Any]:
    import torch

    class Gelu(torch.nn.Module):
        """nn.GELU through opsdk's Gelu."""

        def __init__(self, approximate: str) -> None:
            super().__init__()
            self.approximate = approximate

        def forward(self, x: Any) -> Any:
            return _op("Gelu")(x, approximate=self.approximate)

    class LayerNorm(torch.nn.Module):
        """nn.LayerNorm through opsdk's LayerNormalization (Y only)."""

        def __init__(self, ln: Any) -> None:
            super().__init__()
            self.axis = -len(ln.normalized_shape)
            self.eps = float(ln.eps)
            if ln.weight is not None:
                self.weight = ln.weight
            else:
                self.register_buffer("weight", torch.ones(ln.normalized_shape))
            self.bias = ln.bias

        def forward(self, x: Any) -> Any:
            return _op("LayerNormalization")(x, self.weight, self.bias, axis=self.axis,
                                             epsilon=self.eps)[0]

    class Softmax(torch.nn.Module):
        """nn.Softmax through opsdk's Softmax."""

        def __init__(self, dim: int) -> None:
            super().__init__()
            self.dim = dim

        def forward(self, x: Any) -> Any:
            return _op("Softmax")(x, axis=self.dim)

    return {"Gelu": Gelu, "LayerNorm": LayerNorm, "Softmax": Softmax}


def _swap_layer(child: Any, kinds: dict[str, Any]) -> tuple[Any, str]:
    """(replacement or None, detail or reason) for one submodule."""
    import torch

    nn = torch.nn
    if isinstance(child, nn.GELU):
        detail = f"{_DOMAIN}::Gelu (approximate={child.approximate!r})"
        return kinds["Gelu"](child.approximate), detail
    if isinstance(child, nn.LayerNorm):
        if child.weight is not None and child.weight.dtype == torch.float64:
            return None, "float64 parameters; LayerNormalization has float16/bfloat16/float32"
        return kinds["LayerNorm"](child), (f"{_DOMAIN}::LayerNormalization "
                                           f"(axis={-len(child.normalized_shape)}, "
                                           f"epsilon={child.eps})")
    if isinstance(child, nn.Softmax):
        if child.dim is None:
            return None, "dim=None (the legacy implicit dim); give nn.Softmax a dim"
        return kinds["Softmax"](child.dim), f"{_DOMAIN}::Softmax (axis={child.dim})"
    return None, ""


def _swap_layers(module: Any, report: ReplaceReport, prefix: str = "") -> None:
    kinds = _modules()
    for name, child in list(module.named_children()):
        where = f"{prefix}{name}"
        new, detail = _swap_layer(child, kinds)
        if new is not None:
            setattr(module, name, new)
            report.swapped.append((where, f"nn.{type(child).__name__}", detail))
        elif detail:
            report.left.append((where, f"nn.{type(child).__name__}", detail))
        elif not isinstance(child, tuple(kinds.values())):
            _swap_layers(child, report, where + ".")


def _softmax_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, str]:
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    if kwargs.get("dtype") is not None or (len(args) > 3 and args[3] is not None):
        return None, "dtype= casts before the softmax; opsdk's Softmax keeps the input dtype"
    if not isinstance(dim, int):
        return None, f"dim is {dim!r}, not a constant int"
    return ((args[0],), {"axis": dim}), f"{_DOMAIN}::Softmax (axis={dim})"


def _grid_sample_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, str]:
    names = ["input", "grid", "mode", "padding_mode", "align_corners"]
    bound = {**dict(zip(names, args)), **kwargs}
    mode = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}.get(
        bound.get("mode", "bilinear"))
    padding = bound.get("padding_mode", "zeros")
    if mode is None or padding not in ("zeros", "border", "reflection"):
        return None, f"mode={bound.get('mode')!r}, padding_mode={padding!r} are not constants " \
            "GridSample knows"
    align = int(bool(bound.get("align_corners") or False))
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    return ((bound["input"], bound["grid"]), attrs), f"{_DOMAIN}::GridSample {attrs}"


def _swap_functions(module: Any, report: ReplaceReport) -> Any:
    import torch
    import torch.nn.functional as F

    rules = {F.softmax: ("F.softmax", "Softmax", _softmax_call),
             torch.softmax: ("torch.softmax", "Softmax", _softmax_call),
             F.grid_sample: ("F.grid_sample", "GridSample", _grid_sample_call)}
    try:
        gm = torch.fx.symbolic_trace(module)
    except Exception as e:
        report.left.append(("forward", "functional calls", "not traceable by torch.fx "
                            f"({type(e).__name__}: {str(e).splitlines()[0]}); only layers "
                            "were swapped"))
        return module
    changed = False
    for node in gm.graph.nodes:
        rule = rules.get(node.target) if node.op == "call_function" else None
        if rule is None:
            continue
        what, op_name, match = rule
        call, detail = match(tuple(node.args), dict(node.kwargs))
        if call is None:
            report.left.append((node.name, what, detail))
            continue
        node.target, (node.args, node.kwargs) = _op(op_name).default, call
        report.swapped.append((node.name, what, detail))
        changed = True
    if not changed:
        return module
    gm.graph.lint()
    gm.recompile()
    return gm


def replace(module: Any) -> tuple[Any, ReplaceReport]:
    """Swap standard layers (in place) and functional calls (through torch.fx) for opsdk
    operators; returns the module (a GraphModule when a function call was swapped) and the
    report. See the module docstring for the rules."""
    report = ReplaceReport()
    _swap_layers(module, report)
    return _swap_functions(module, report), report
