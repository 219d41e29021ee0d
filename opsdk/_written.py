"""Files opsdk wrote: the one writer, remover and record of generated folders.

Every folder opsdk generates (a CANN project, a Triton model folder, an operator's
``op_kernel/``, a wheel's build project) is written through these helpers, and a record
(a small JSON file in the folder) lists what opsdk wrote with each file's hash. The rules:

- a path is relative to the folder it was given and stays inside it: an absolute path or a
  ``..`` in a record, a caller or a manifest is refused, naming the path;
- no symlink is followed: a symlinked file or folder anywhere between the folder and the
  file is refused (naming it), so nothing is created, overwritten or deleted elsewhere;
- only files the record lists are removed; the caller decides what to do with the rest.

Single files a command writes where the user said (``opsdk export -o m.onnx``, a rewritten
model, a wheel) go through :func:`write_output`: a symlink there is refused (its target is
never touched), an existing file is replaced only with ``--force``, and the file's hash is
kept in the folder's ``.opsdk-outputs.json``, the record of what opsdk wrote there.

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> write_file(root, "a/b.txt", "hi")
    PosixPath('.../a/b.txt')
    >>> write_record(root, ".opsdk-files.json", {"a/b.txt": sha256("hi")})
    >>> read_record(root, ".opsdk-files.json")
    {'a/b.txt': '8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4'}
    >>> remove_file(root, "a/b.txt")
    True
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import OutputExistsError, UnsafePath

__all__ = [
    "OUTPUT_RECORD",
    "OutputExistsError",
    "UnsafePath",
    "check_output",
    "write_output",
    "check_relative",
    "safe_target",
    "write_file",
    "remove_file",
    "remove_empty_dirs",
    "read_record",
    "read_record_data",
    "write_record",
    "sha256",
    "walk_files",
]

#: Largest record opsdk reads (a record lists a few hundred paths at most).
_RECORD_LIMIT = 4 << 20

#: The record, in a folder, of the single files opsdk wrote there (see write_output).
OUTPUT_RECORD = ".opsdk-outputs.json"


def sha256(data: str | bytes) -> str:
    """Hex SHA-256 of ``data`` (text is UTF-8 encoded).

    Example:
        >>> sha256("")[:8]
        'e3b0c442'
    """
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def check_relative(rel: str, source: str = "path") -> str:
    """``rel`` as a clean POSIX path relative to a folder, or :class:`UnsafePath`.

    ``source`` names where the path came from (a record file, an option) in the error.

    Example:
        >>> check_relative("1/model.onnx")
        '1/model.onnx'
        >>> check_relative("/etc/passwd", "repo/m/.opsdk-files.json")
        Traceback (most recent call last):
        ...
        opsdk.errors.UnsafePath: repo/m/.opsdk-files.json: '/etc/passwd' is not a path inside \
the folder (absolute paths and '..' are refused)
    """
    p = PurePosixPath(rel) if isinstance(rel, str) else None
    if (
        p is None or not rel or "\\" in rel or "\0" in rel or p.is_absolute()
        or any(part in ("..", ".") for part in rel.split("/")) or rel.endswith("/")
    ):
        raise UnsafePath(
            f"{source}: {rel!r} is not a path inside the folder (absolute paths and '..' are "
            "refused)"
        )
    return p.as_posix()


def safe_target(root: Path, rel: str, source: str = "path") -> Path:
    """``root / rel`` after checking that ``rel`` stays inside ``root`` and that no part of
    it that exists (folders on the way, the file itself) is a symlink.

    Raises:
        UnsafePath: naming the path and the symlink.

    Example:
        >>> safe_target(Path("/tmp/x"), "a/b")
        PosixPath('/tmp/x/a/b')
    """
    rel = check_relative(rel, source)
    here = root
    for part in PurePosixPath(rel).parts:
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            break
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePath(
                f"{here} is a symlink (to {os.readlink(here)}); opsdk never writes, replaces or "
                f"deletes through a symlink inside {root}: remove the link or pick another folder"
            )
    return root / rel


def _make_dirs(root: Path, rel: str) -> None:
    here = root
    for part in PurePosixPath(rel).parts[:-1]:
        here = here / part
        if not here.is_symlink() and here.is_dir():
            continue
        if here.is_symlink() or here.exists():
            raise UnsafePath(f"{here} is not a folder opsdk can write into (a file or symlink)")
        here.mkdir()


def write_file(root: Path, rel: str, data: str | bytes, mode: int | None = None) -> Path:
    """Write ``data`` to ``root/rel`` (folders made as needed) without following a symlink.

    The file is written next to its target and renamed over it, so a symlink or hard link
    that appears at the last moment is replaced, never written through. ``mode`` sets the
    permissions (default: the umask's).

    Example:
        >>> import tempfile
        >>> write_file(Path(tempfile.mkdtemp()), "build.sh", "#!/bin/sh\\n", 0o755).name
        'build.sh'
    """
    root.mkdir(parents=True, exist_ok=True)
    target = safe_target(root, rel)
    _make_dirs(root, check_relative(rel))
    tmp = target.with_name(f".{target.name}.opsdk-tmp.{os.getpid()}")
    raw = data.encode() if isinstance(data, str) else data
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def remove_file(root: Path, rel: str, source: str = "path") -> bool:
    """Delete the regular file ``root/rel``; False when it does not exist.

    A symlink (at the file or on its way) or a non-file there is refused: opsdk never wrote it.

    Example:
        >>> import tempfile
        >>> remove_file(Path(tempfile.mkdtemp()), "gone.txt")
        False
    """
    target = safe_target(root, rel, source)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"{target} is not a regular file; opsdk did not write it and will not "
                         "delete it")
    target.unlink()
    return True


def remove_empty_dirs(root: Path) -> None:
    """Remove the empty folders under ``root`` (deepest first), never following a symlink."""
    for here, dirs, _files in os.walk(root, topdown=False, followlinks=False):
        for d in dirs:
            p = Path(here) / d
            if not p.is_symlink() and not any(p.iterdir()):
                p.rmdir()


def read_record(root: Path, name: str) -> dict[str, str | None]:
    """The files a record in ``root`` lists, ``{relative path: sha256 or None}``.

    ``{}`` when there is no record. A record that lists a path outside ``root`` is refused
    (naming the record and the path); an unreadable one is :class:`UnsafePath` too.

    Example:
        >>> import tempfile
        >>> read_record(Path(tempfile.mkdtemp()), ".opsdk-manifest.json")
        {}
    """
    return _entries(read_record_data(root, name), root / name)


def read_record_data(root: Path, name: str) -> dict[str, Any]:
    """The whole JSON object of the record ``root/name`` (``{}`` when there is none)."""
    path = root / name
    if path.is_symlink():
        raise UnsafePath(f"{path} is a symlink; opsdk reads only the record it wrote")
    if not path.exists():
        return {}
    if not path.is_file():
        raise UnsafePath(f"{path} is not a file; remove it or pick another folder")
    try:
        with open(path, "rb") as f:
            raw = f.read(_RECORD_LIMIT + 1)
        if len(raw) > _RECORD_LIMIT:
            raise ValueError(f"larger than {_RECORD_LIMIT} bytes")
        data = json.loads(raw)
    except (OSError, ValueError) as e:
        raise UnsafePath(
            f"{path}: unreadable opsdk record ({e}); remove it or pick another folder"
        ) from None
    return data if isinstance(data, dict) else {}


def _entries(data: Mapping[str, Any], path: Path) -> dict[str, str | None]:
    files = data.get("files", {})
    if isinstance(files, list):  # older Triton records: a list of paths
        files = {f: None for f in files}
    if not isinstance(files, dict):
        raise UnsafePath(f"{path}: 'files' is not a list of paths; remove the record")
    out: dict[str, str | None] = {}
    for rel, digest in files.items():
        out[check_relative(rel, str(path))] = digest if isinstance(digest, str) else None
    return out


def write_record(root: Path, name: str, files: Mapping[str, str | None],
                 **meta: Any) -> None:
    """Write the record ``root/name``: ``meta`` fields and ``files`` (path -> sha256)."""
    for rel in files:
        check_relative(rel)
    data = {"generator": "opsdk", **meta, "files": dict(sorted(files.items()))}
    write_file(root, name, json.dumps(data, indent=2) + "\n")


def walk_files(root: Path, want: Callable[[str, bool], bool] | None = None) -> Iterator[str]:
    """Every file under ``root`` as a sorted relative POSIX path, following no symlink.

    ``want(rel, is_dir)`` leaves out files and whole folders it returns False for. A symlink
    (to a file or a folder) that is wanted is :class:`UnsafePath` naming it: opsdk cannot
    prove that what it points at belongs to the folder.

    Example:
        >>> import tempfile
        >>> list(walk_files(Path(tempfile.mkdtemp())))
        []
    """
    found = []
    for here, dirs, files in os.walk(root, followlinks=False):
        base = Path(here)
        for name in [*dirs, *files]:
            p = base / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink() and (want is None or want(rel, name in dirs)):
                raise UnsafePath(
                    f"{p} is a symlink (to {os.readlink(p)}); opsdk never follows a symlink "
                    f"out of {root}: replace it with the file itself or remove it"
                )
        dirs[:] = [d for d in dirs if want is None or want((base / d).relative_to(root)
                                                            .as_posix(), True)]
        for f in files:
            rel = (base / f).relative_to(root).as_posix()
            if (want is None or want(rel, False)) and (base / f).is_file():
                found.append(rel)
    yield from sorted(found)


def check_output(path: str | os.PathLike[str], force: bool = False, flag: str = "-o",
                 replace_own: bool = False) -> Path:
    """Refuse an output path before any long work: a symlink (even with ``force``), a
    folder or other non-file, or an existing file without ``force``.

    ``flag`` is the option that named the path, for the fix in the message. With
    ``replace_own`` (a command with no ``--force``, such as a report rewritten on each run),
    a file the folder's record says opsdk wrote, unchanged since, is replaced.

    Raises:
        UnsafePath: a symlink or a non-file at ``path``.
        OutputExistsError: a file there and no ``force``.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "m.onnx"
        >>> check_output(p) == p
        True
    """
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(
            f"{p} is a symlink (to {os.readlink(p)}); opsdk never writes through a symlink, "
            f"--force or not: remove the link or choose another {flag}"
        )
    if stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"{flag} {p}: it is a folder; pass a file path")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"{flag} {p}: it exists and is not a file; choose another {flag}")
    if force:
        return p
    if replace_own:
        folder = p.parent if str(p.parent) else Path(".")
        if read_record(folder, OUTPUT_RECORD).get(p.name) == sha256(p.read_bytes()):
            return p
        raise OutputExistsError(
            f"{p} exists and opsdk did not write it (or it changed since, see "
            f"{folder / OUTPUT_RECORD}); remove it yourself or choose another {flag}"
        )
    raise OutputExistsError(
        f"{p} exists; pass --force (force=True) to replace it, or choose another {flag}"
    )


def write_output(path: str | os.PathLike[str], data: str | bytes, *, force: bool = False,
                 mode: int | None = None, flag: str = "-o",
                 also: Mapping[str, str | bytes] | None = None,
                 replace_own: bool = False) -> Path:
    """Write the user-visible file ``path`` by the rules of :func:`check_output`, atomically
    (written beside it and renamed), and record its hash in the folder's
    :data:`OUTPUT_RECORD`. ``also`` holds files written beside it by the same rules
    (``{name: data}``, e.g. a model's external data).

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "m.onnx"
        >>> write_output(p, b"onnx") == p
        True
        >>> write_output(p, b"again")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        opsdk.errors.OutputExistsError: .../m.onnx exists; pass --force (force=True) to replace...
        >>> read_record(p.parent, OUTPUT_RECORD) == {"m.onnx": sha256(b"onnx")}
        True
    """
    p = Path(path)
    files = {p.name: data, **dict(also or {})}
    for name in files:
        check_output(p.parent / check_relative(name), force, flag, replace_own)
    folder = p.parent if str(p.parent) else Path(".")
    record = read_record(folder, OUTPUT_RECORD)
    for name, content in files.items():
        write_file(folder, name, content, mode)
        record[name] = sha256(content)
    write_record(folder, OUTPUT_RECORD, record)
    return p
