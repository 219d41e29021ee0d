"""`opsdk.registry.load_spec` from many threads at once (an AscendcModel per worker thread,
as the race-mutant tests build them): each import of an operator folder swaps that folder's
package modules in sys.modules, so concurrent loads are serialised and the module list is
read from a snapshot. Before, a load iterating sys.modules while another thread imported
failed with "dictionary changed size during iteration"."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import shutil
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from opsdk import registry

OPERATORS = Path(__file__).resolve().parents[2] / "operators"


def test_specs_load_from_many_threads_while_others_import(tmp_path: Path) -> None:
    folders = []
    for k in range(4):  # four folders, four packages swapped in and out
        folder = tmp_path / f"thresholded_relu_{k}"
        shutil.copytree(OPERATORS / "thresholded_relu", folder,
                        ignore=shutil.ignore_patterns("test_*", "__pycache__"))
        folders.append(folder)
    stop = threading.Event()

    def importer() -> None:  # keeps sys.modules changing size
        n = 0
        while not stop.is_set():
            name = f"_opsdk_registry_probe_{n % 50}"
            sys.modules.pop(name, None)
            sys.modules[name] = importlib.util.module_from_spec(
                importlib.machinery.ModuleSpec(name, None))
            n += 1

    churn = threading.Thread(target=importer, daemon=True)
    churn.start()
    try:
        def load(i: int) -> str:
            registry._SPEC_CACHE.clear()  # every call imports again
            return registry.load_spec(folders[i % 4]).name

        with ThreadPoolExecutor(8) as pool:
            names = list(pool.map(load, range(120)))
    finally:
        stop.set()
        churn.join()
        for n in range(50):
            sys.modules.pop(f"_opsdk_registry_probe_{n}", None)
    assert names == ["ThresholdedRelu"] * 120
