"""CANN versions: parse ``--cann`` arguments and read the installed toolkit's version.

One place says which CANN release does what, so the project layout (`opsdk cann`), the
ONNX parser rules (doctor, `opsdk triton build --target ascend`) and the docs agree:

* CANN 8.x builds custom operator projects through the host's own ``msopgen``; CANN 9.0
  and later ship the ASC CMake package (``find_package(ASC)``, ``npu_op_library``).
* Every released GE ONNX parser through 9.1 rejects a default-domain node when the model
  imports more than one domain (E16005); later parsers accept it.

Example:
    >>> v = parse_cann_version("8.1.RC1")
    >>> (v.major, v.minor, v.label, v.project_layout)
    (8, 1, '8.1.RC1', 'msopgen')
    >>> parse_cann_version("9").project_layout
    'cmake-modules'
    >>> parse_cann_version("9.1").rejects_mixed_default_domain
    True
"""

from __future__ import annotations

import os
import platform
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .socs import CannArgError

__all__ = [
    "DEFAULT_CANN",
    "CannVersion",
    "ResolvedCann",
    "parse_cann_version",
    "toolkit_root",
    "toolkit_version",
    "read_small_text",
    "resolve_cann",
    "ENGINES",
    "check_socs",
]

#: Without a toolkit to read, projects target this release (most Ascend hosts run 8.x).
DEFAULT_CANN = "8.1.RC1"
#: The first release whose toolkit ships the ASC CMake package config.
_FIRST_CMAKE_MODULES = (9, 0)
#: The last release whose GE ONNX parser rejects a default-domain node in a multi-domain model.
_LAST_E16005 = (9, 1)
#: Compute units an Ascend C (AI Core) project can target, from the first release that has them.
#: Ascend310 (the first-generation inference chip) has no Ascend C support in any release.
_ASCENDC_UNITS: tuple[tuple[tuple[int, int], tuple[str, ...]], ...] = (
    ((8, 0), ("ascend910", "ascend910b", "ascend910_93", "ascend310p", "ascend310b")),
)
#: Engines an operator project can build: the operator's own C++ kernel on the AI CPU, a
#: generated or hand-written Ascend C kernel on the AI Core, or both in one package.
ENGINES = ("aicpu", "aicore", "both")
_TOOLKIT_DEFAULT = Path("/usr/local/Ascend/ascend-toolkit/latest")
_VERSION_RE = re.compile(r"^\s*(\d+)(?:\.(\d+))?(?:[.\-_]?([A-Za-z0-9.]+))?\s*$")


@dataclass(frozen=True, order=True)
class CannVersion:
    """A CANN release, ordered by (major, minor); ``label`` keeps the text as given."""

    major: int
    minor: int = 0
    label: str = field(default="", compare=False)

    @property
    def project_layout(self) -> str:
        """``msopgen`` (CANN 8.x: the host's msopgen builds the project) or ``cmake-modules``."""
        return "cmake-modules" if (self.major, self.minor) >= _FIRST_CMAKE_MODULES else "msopgen"

    @property
    def rejects_mixed_default_domain(self) -> bool:
        """True where GE's ONNX parser fails a default-domain node next to another domain."""
        return (self.major, self.minor) <= _LAST_E16005

    @property
    def ascendc_compute_units(self) -> tuple[str, ...]:
        """Compute units this release's Ascend C (AI Core) projects can target."""
        units: tuple[str, ...] = ()
        for first, names in _ASCENDC_UNITS:
            if (self.major, self.minor) >= first:
                units = names
        return units

    def __str__(self) -> str:
        return self.label or f"{self.major}.{self.minor}"


@dataclass(frozen=True)
class ResolvedCann:
    """The CANN version a command targets and why (printed by the CLI)."""

    version: CannVersion
    reason: str
    toolkit: Path | None = None


def parse_cann_version(text: str) -> CannVersion:
    """Parse ``8``, ``8.1``, ``8.1.RC1``, ``8.5.0``, ``9.0.T10`` ... into a CannVersion.

    Raises:
        CannArgError: the text is not a CANN version (the message shows accepted forms).

    Example:
        >>> parse_cann_version("8.5.0") > parse_cann_version("8.1.RC1")
        True
    """
    m = _VERSION_RE.match(text or "")
    major = int(m.group(1)) if m else 0
    if not m or not 5 <= major <= 99:
        raise CannArgError(
            f"--cann {text!r} is not a CANN version; use auto, a major version (8, 9) or a "
            f"release such as 8.1.RC1 or 9.0.0 (see the toolkit's version.info)"
        )
    return CannVersion(major, int(m.group(2) or 0), text.strip())


def toolkit_root(env: Mapping[str, str] | None = None) -> Path | None:
    """The installed CANN toolkit (``$ASCEND_HOME_PATH``, ``$ASCEND_TOOLKIT_HOME``, the
    default install prefix), or None.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     toolkit_root({"ASCEND_HOME_PATH": d}) == Path(d)
        True
    """
    env = os.environ if env is None else env
    for cand in (env.get("ASCEND_HOME_PATH"), env.get("ASCEND_TOOLKIT_HOME"), _TOOLKIT_DEFAULT):
        if cand and Path(cand).is_dir():
            return Path(cand)
    return None


#: The most bytes a toolkit's version or install info file may have (they are a few lines).
_INFO_LIMIT = 64 * 1024


def read_small_text(path: Path, limit: int = _INFO_LIMIT) -> str:
    r"""The text of the regular file ``path``, read without blocking and at most ``limit`` bytes.

    A FIFO, a device (``/dev/zero``) or any other special file, or a file larger than
    ``limit``, is refused instead of read: opening does not block and nothing larger than
    ``limit`` is held in memory.

    Raises:
        FileNotFoundError: ``path`` does not exist (an OSError, as for any unreadable path).
        CannArgError: ``path`` is not a regular file or is too large, naming the path.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "version.info"
        >>> _ = p.write_text("version_dir=8.1.RC1\n")
        >>> read_small_text(p)
        'version_dir=8.1.RC1\n'
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CannArgError(
                f"{path} is not a regular file (a FIFO, device or socket); a CANN toolkit "
                "installs a small text file there. Point ASCEND_HOME_PATH at a real toolkit "
                "or pass --cann <version>"
            )
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise CannArgError(
            f"{path} is larger than {limit} bytes; a CANN toolkit's version file is a few lines. "
            "Point ASCEND_HOME_PATH at a real toolkit or pass --cann <version>"
        )
    return data.decode("utf-8", errors="replace")


def toolkit_version(root: Path) -> CannVersion | None:
    r"""The release of the toolkit at ``root``, read from the files the installer writes.

    Looked up in order: ``version_dir=`` of a component's ``version.info`` (``compiler/``,
    ``toolkit/``, ``runtime/``, ``opp/``: ``version_dir=8.1.RC1``; their ``Version=`` is the
    component's own number, 7.7.0.1.238 in CANN 8.1.RC1, not the release),
    ``<arch>-linux/ascend_toolkit_install.info`` (``version=8.1.RC1``; the host's arch first,
    then any), ``version.cfg``. A component's ``Version=`` alone is never taken for the
    release. Every file is read with :func:`read_small_text`.

    Raises:
        CannArgError: one of these files is a FIFO, a device or too large (naming it).

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "compiler").mkdir()
        >>> _ = (root / "compiler" / "version.info").write_text(
        ...     "Version=7.7.0.1.238\nversion_dir=8.1.RC1\n")
        >>> str(toolkit_version(root))
        '8.1.RC1'
    """
    components = [root / d / "version.info" for d in ("compiler", "toolkit", "runtime", "opp")]
    arch = platform.machine()
    installs = [root / f"{arch}-linux" / "ascend_toolkit_install.info"]
    installs += sorted(p for p in root.glob("*-linux/ascend_toolkit_install.info")
                       if p not in installs)
    lookups = [(p, "version_dir") for p in components]
    lookups += [(p, "version") for p in installs] + [(root / "version.cfg", "version")]
    for path, key in lookups:
        try:
            text = read_small_text(path)
        except OSError:
            continue
        m = re.search(rf"^[ \t]*{key}[ \t]*=[ \t]*[\"\[]?([0-9][0-9A-Za-z.\-_]*)", text, re.M)
        if m:
            try:
                return parse_cann_version(m.group(1))
            except CannArgError:
                continue
    return None


def resolve_cann(arg: str = "auto", env: Mapping[str, str] | None = None) -> ResolvedCann:
    """The CANN release a command targets: ``auto`` reads the installed toolkit, else the
    default (:data:`DEFAULT_CANN`); anything else is parsed as a version.

    Example:
        >>> r = resolve_cann("auto", env={})
        >>> str(r.version) if r.toolkit is None else "8.1.RC1"
        '8.1.RC1'
        >>> resolve_cann("9").version.project_layout
        'cmake-modules'
    """
    if arg != "auto":
        return ResolvedCann(parse_cann_version(arg), f"--cann {arg}")
    root = toolkit_root(env)
    if root is not None:
        found = toolkit_version(root)
        if found is not None:
            return ResolvedCann(found, f"the toolkit at {root} is CANN {found}", root)
        reason = f"the toolkit at {root} does not say its version; assuming CANN {DEFAULT_CANN}"
        return ResolvedCann(parse_cann_version(DEFAULT_CANN), reason, root)
    reason = f"no CANN toolkit found (ASCEND_HOME_PATH unset); assuming CANN {DEFAULT_CANN}"
    return ResolvedCann(parse_cann_version(DEFAULT_CANN), reason)


def check_socs(units: list[str], version: CannVersion, engine: str) -> None:
    """Refuse compute units the engine cannot target on this CANN release.

    The AI CPU runs on every SoC; an AI Core (Ascend C) kernel only on the units of
    :attr:`CannVersion.ascendc_compute_units`.

    Raises:
        CannArgError: naming the unit, the release and the valid units.

    Example:
        >>> check_socs(["ascend910b"], parse_cann_version("8.1.RC1"), "both")
        >>> check_socs(["ascend310"], parse_cann_version("8.1.RC1"), "aicpu")
        >>> try:
        ...     check_socs(["ascend310"], parse_cann_version("8"), "aicore")
        ... except CannArgError as e:
        ...     print(str(e)[:61])
        --soc ascend310: Ascend C on CANN 8 does not target ascend310
    """
    if engine not in ENGINES:
        raise CannArgError(f"--engine {engine!r} is not one of {', '.join(ENGINES)}")
    if engine == "aicpu":
        return
    valid = version.ascendc_compute_units
    for unit in units:
        if unit not in valid:
            raise CannArgError(
                f"--soc {unit}: Ascend C on CANN {version} does not target {unit}; valid: "
                f"{', '.join(valid)} (or --engine aicpu, which runs on every SoC)"
            )
