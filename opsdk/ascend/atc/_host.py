"""The host procedure ``opsdk atc`` prints: what an NPU host runs, in order, to convert a model.

1. the toolkit's environment; 2. for a model with custom operators, build and install each
operator package (``custom_opp_<os>_<arch>.run --install-path=<absolute dir>``, after which
the package's installer writes ``<dir>/vendors/<vendor>/bin/set_env.bash``, read in CANN
8.1's ``op_project_templates/ascendc/customize/scripts/install.sh``) and source it; 3. the
``atc`` line itself, with its shapes and gears.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from ...naming import snake_case

__all__ = ["host_procedure", "gear_flags"]

#: Where the procedure installs operator packages (the installer wants an absolute path).
INSTALL_DIR = "$HOME/opp"
_TOOLKIT_ENV = "source /usr/local/Ascend/ascend-toolkit/set_env.sh"


def host_procedure(
    command: Sequence[str],
    env: Mapping[str, str],
    custom_ops: Mapping[str, Sequence[str]],
    op_projects: Mapping[str, str],
    custom_opp: Sequence[str],
    model: str,
) -> list[str]:
    """Shell lines, in order, that convert the model on an NPU host.

    ``custom_ops`` maps each custom op type to the plugin keys the model needs;
    ``op_projects`` maps an op type to the ``opsdk cann`` project given for it;
    ``custom_opp`` lists installed vendor folders given with ``--custom-opp``.

    Example:
        >>> lines = host_procedure(["atc", "--framework=5"], {}, {"GridSample":
        ...     ["com.opsdk::1::GridSample"]}, {}, [], "m.onnx")
        >>> lines[0]
        'source /usr/local/Ascend/ascend-toolkit/set_env.sh'
        >>> any("--install-path=$HOME/opp; done" in ln for ln in lines)
        True
    """
    lines = [_TOOLKIT_ENV]
    if custom_opp:
        lines.append("# the operator packages given with --custom-opp, installed already:")
        lines += [f"source {shlex.quote(str(Path(d) / 'bin' / 'set_env.bash'))}"
                  for d in custom_opp]
    elif custom_ops:
        lines += _package_lines(custom_ops, op_projects, model)
    lines.append("# convert (ATC appends .om to --output):")
    lines.append(shlex.join(command))
    return lines


def _package_lines(
    custom_ops: Mapping[str, Sequence[str]], op_projects: Mapping[str, str], model: str
) -> list[str]:
    """Build, install and source the operator package of every custom op of the model."""
    lines = []
    for op, keys in custom_ops.items():
        folder = op_projects.get(op) or f"build/cann/{snake_case(op)}"
        lines.append(f"# custom operator {op} (plugin key {', '.join(keys)}): build and "
                     "install its operator package")
        if op not in op_projects:
            lines.append(f"opsdk cann {op} -o {folder} --onnx-model {shlex.quote(model)}")
        lines.append(f"(cd {shlex.quote(folder)} && ./build.sh)")
        lines.append(f"for pkg in {shlex.quote(folder)}/build_out/*/custom_opp_*.run; do "
                     f"\"$pkg\" --install-path={INSTALL_DIR}; done")
    lines.append(f"for f in {INSTALL_DIR}/vendors/*/bin/set_env.bash; do source \"$f\"; done"
                 "   # adds each package to ASCEND_CUSTOM_OPP_PATH")
    return lines


def gear_flags(shapes: Mapping[str, Sequence[str]], dynamic_dims: str) -> list[str]:
    """ATC's flags for shape gears: ``--dynamic_dims`` with one value per ``-1`` dim of
    ``--input-shape`` in each gear, and ``--input_format=ND`` (which ATC requires with it).

    Raises:
        CannArgError: no ``-1`` dim, a gear with the wrong count or a non-positive value,
            fewer than 2 or more than 100 gears (ATC's limits).

    Example:
        >>> gear_flags({"x": ["-1", "3", "-1"]}, "1,224;8,448")
        ['--dynamic_dims=1,224;8,448', '--input_format=ND']
    """
    from ..socs import CannArgError

    wanted = sum(1 for dims in shapes.values() for d in dims if d == "-1")
    if not wanted:
        raise CannArgError("--dynamic-dims gives values for the -1 dims of --input-shape, "
                           "which has none; write the dynamic dims as -1 (e.g. x:-1,3,-1,-1)")
    gears = [g.strip() for g in dynamic_dims.split(";") if g.strip()]
    if not 2 <= len(gears) <= 100:
        raise CannArgError(f"--dynamic-dims has {len(gears)} gear(s); ATC takes 2 to 100, "
                           "separated by ';'")
    for gear in gears:
        values = [v.strip() for v in gear.split(",")]
        if len(values) != wanted or not all(v.isdigit() and 0 < int(v) < 2**63 for v in values):
            raise CannArgError(
                f"--dynamic-dims gear {gear!r}: needs {wanted} positive int64(s), one per -1 "
                "dim of --input-shape in order; give e.g. --dynamic-dims "
                f"'{','.join(['1'] * wanted)};{','.join(['8'] * wanted)}'"
            )
    return [f"--dynamic_dims={';'.join(gears)}", "--input_format=ND"]
