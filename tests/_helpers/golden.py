"""The one golden-file helper of opsdk's tests.

Goldens live under tests/golden/ and are named by their path there. A golden whose content
equals another golden's is stored once: the later copy is a pointer file holding one line,
``@golden-same-as <path under tests/golden>``, which this helper follows. With
``OPSDK_UPDATE_GOLDEN=1`` the helpers write what the code generates (a pointer stays a
pointer while its target still matches); :func:`share_duplicates` turns byte-identical
goldens into pointers.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
POINTER = "@golden-same-as "


def _updating() -> bool:
    return os.environ.get("OPSDK_UPDATE_GOLDEN") == "1"


def read_golden(rel: str) -> str:
    """The text of golden ``rel``, following pointers."""
    text = (GOLDEN / rel).read_text()
    seen = {rel}
    while text.startswith(POINTER):
        target = text[len(POINTER):].strip()
        assert target not in seen, f"golden pointer loop through {target}"
        seen.add(target)
        text = (GOLDEN / target).read_text()
    return text


def _update(rel: str, text: str) -> None:
    path = GOLDEN / rel
    if path.is_file() and path.read_text().startswith(POINTER) and read_golden(rel) == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def check_golden(rel: str, text: str) -> None:
    """Assert ``text`` equals golden ``rel`` (a path under tests/golden)."""
    if _updating():
        _update(rel, text)
    path = GOLDEN / rel
    assert path.is_file(), f"missing golden {path}; run with OPSDK_UPDATE_GOLDEN=1"
    assert text == read_golden(rel), f"{rel} changed; regenerate with OPSDK_UPDATE_GOLDEN=1"


def check_tree(folder: str, files: Mapping[str, str]) -> None:
    """Assert a generated tree ``{relative path: text}`` equals the golden folder ``folder``
    file for file, with no file more or less."""
    if _updating():
        for rel, text in files.items():
            _update(f"{folder}/{rel}", text)
    root = GOLDEN / folder
    on_disk = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert on_disk == sorted(files), f"{folder}: file set changed; regenerate with OPSDK_UPDATE_GOLDEN=1"
    for rel, text in files.items():
        assert read_golden(f"{folder}/{rel}") == text, f"{folder}/{rel} differs from its golden"


def share_duplicates(root: Path = GOLDEN) -> list[tuple[str, str]]:
    """Turn every golden that repeats an earlier one (in path order) into a pointer to it;
    return the (pointer, target) pairs."""
    first: dict[str, str] = {}
    pairs = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        if text.startswith(POINTER):
            continue
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest in first:
            path.write_text(f"{POINTER}{first[digest]}\n")
            pairs.append((rel, first[digest]))
        else:
            first[digest] = rel
    return pairs


if __name__ == "__main__":  # python tests/_helpers/golden.py: share the duplicates
    for pointer, target in share_duplicates():
        print(f"{pointer} -> {target}")
