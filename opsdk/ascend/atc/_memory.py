"""The options that decide a model's memory on the NPU: data-cache optimisation and GE's
static-memory policy, what each value trades, and where CANN's documentation says a value
conflicts with dynamic shapes, shape gears or concurrent graphs.

Facts (CANN 8.1.RC1: the ATC parameter pages and ``include/ge/ge_api_types.h``):

* ``--buffer_optimize`` (GE option ``ge.bufferOptimize``, one of GE's global options):
  ``l2_optimize`` (the default) keeps reused data in the L2 buffer; ``l1_optimize`` is
  documented as having no effect in current releases (it behaves as ``off_optimize``);
  ``off_optimize`` turns data-cache optimisation off, which CANN suggests only to find an
  operator whose precision suffers from it. No conflict with dynamic shapes is documented.
* ``ge.exec.staticMemoryPolicy`` (and the deprecated environment variable
  ``GE_USE_STATIC_MEMORY``, which must not be set together with it) is not an ATC flag: ATC
  8.1's option set (``ir_builder_suppported_options``) has no static-memory entry. GE reads it
  when a graph runs: 0 allocates by the actual size (default); 2 expands memory for
  static-shape graphs only, reusing one allocation (the largest graph's) across the graphs of
  a session; 3 expands memory for dynamic-shape graphs only (less fragmentation, less
  memory); 4 both. 1 is read as 2. 2 and 4 are not supported when several graphs execute
  concurrently; 3 and 4 save memory but may cost performance.
"""

from __future__ import annotations

from dataclasses import dataclass

from .doctor import Finding

__all__ = ["BUFFER_OPTIMIZE", "STATIC_MEMORY_POLICIES", "GE_BUFFER_OPTIMIZE",
           "GE_STATIC_MEMORY_POLICY", "GE_STATIC_MEMORY_ENV", "MemoryOptions",
           "memory_findings", "check_memory_options"]

#: ``--buffer_optimize`` values, the default first.
BUFFER_OPTIMIZE = ("l2_optimize", "l1_optimize", "off_optimize")
#: ``ge.exec.staticMemoryPolicy`` values and what each does.
STATIC_MEMORY_POLICIES: dict[int, str] = {
    0: "allocate by the actual size (default)",
    1: "read as 2",
    2: "expand memory for static-shape graphs, one allocation reused across a session's graphs",
    3: "expand memory for dynamic-shape graphs (less fragmentation and memory)",
    4: "expand memory for static- and dynamic-shape graphs",
}
GE_BUFFER_OPTIMIZE = "ge.bufferOptimize"
GE_STATIC_MEMORY_POLICY = "ge.exec.staticMemoryPolicy"
GE_STATIC_MEMORY_ENV = "GE_USE_STATIC_MEMORY"


@dataclass(frozen=True)
class MemoryOptions:
    """The memory options of one conversion or served model, and the graph they apply to.

    ``dynamic``: the graph has dynamic dims GE resolves at run time (no gears);
    ``gears``: the dims take shape gears (GE compiles one static-shape graph per gear);
    ``concurrent_graphs``: how many graphs of the model may execute at the same time.
    """

    buffer_optimize: str | None = None
    static_memory_policy: int | None = None
    dynamic: bool = False
    gears: bool = False
    concurrent_graphs: int = 1


def check_memory_options(buffer_optimize: str | None, policy: int | None,
                         flag: str = "--static-memory-policy") -> None:
    """Refuse a value CANN does not accept.

    Raises:
        ValueError: naming the option, the value and the accepted values.

    Example:
        >>> check_memory_options("l2_optimize", 3)
        >>> check_memory_options("l3_optimize", None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: --buffer-optimize 'l3_optimize' is not accepted by ATC/GE; use one of ...
    """
    if buffer_optimize is not None and buffer_optimize not in BUFFER_OPTIMIZE:
        raise ValueError(f"--buffer-optimize {buffer_optimize!r} is not accepted by ATC/GE; "
                         f"use one of {', '.join(BUFFER_OPTIMIZE)}")
    if policy is not None and policy not in STATIC_MEMORY_POLICIES:
        raise ValueError(f"{flag} {policy} is not a GE static-memory policy; use one of "
                         + "; ".join(f"{k}: {v}" for k, v in STATIC_MEMORY_POLICIES.items()))


def memory_findings(opts: MemoryOptions) -> list[Finding]:
    """Warnings where CANN's documentation says the chosen values do nothing or conflict.

    Example:
        >>> [f.code for f in memory_findings(MemoryOptions(static_memory_policy=2,
        ...                                                dynamic=True))]
        ['static-memory-dynamic-shape']
    """
    out = _buffer_findings(opts.buffer_optimize)
    policy = opts.static_memory_policy
    if policy is None:
        return out
    key = f"{GE_STATIC_MEMORY_POLICY}={policy}"
    if policy == 1:
        out.append(_warn("static-memory-1", f"{key} is read as 2 (kept for old configs)",
                         "write 2"))
    if policy in (1, 2) and opts.dynamic:
        out.append(_warn("static-memory-dynamic-shape",
                         f"{key} expands memory for static-shape graphs only, and this model "
                         "runs a dynamic-shape graph (dynamic dims, no gears)",
                         "use 3 (dynamic shapes) or 4 (both), or give the dims gears"))
    if policy == 3 and not opts.dynamic:
        where = "shape gears compile one static-shape graph per gear" if opts.gears else \
            "every dim of this model is fixed"
        out.append(_warn("static-memory-static-shape",
                         f"{key} expands memory for dynamic-shape graphs only, but {where}",
                         "use 2 (static shapes) or 4 (both)"))
    if policy in (1, 2, 4) and opts.concurrent_graphs > 1:
        out.append(_warn("static-memory-concurrent",
                         f"{key} is not supported when several graphs execute concurrently, "
                         f"and this model may run {opts.concurrent_graphs} at once",
                         "use 0 or 3, or run one graph (one instance, one exec block)"))
    return out


def _buffer_findings(value: str | None) -> list[Finding]:
    if value == "l1_optimize":
        return [_warn("buffer-optimize-l1",
                      "--buffer_optimize=l1_optimize has no effect in current CANN releases "
                      "(documented as equal to off_optimize), so it turns the default L2 "
                      "data-cache optimisation off",
                      "use l2_optimize (the default) or say off_optimize")]
    return []


def _warn(code: str, reason: str, fix: str) -> Finding:
    return Finding(code, "warning", None, None, reason, fix)
