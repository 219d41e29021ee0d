"""The model corpus cache: where models live, and a clear error when the registry is
unreachable (the corpus tests then skip with it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from opsdk._fetch import FetchError
from opsdk.testing import corpus


def test_models_live_under_the_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPSDK_CACHE_DIR", str(tmp_path))
    m = corpus.MODELS[0]
    assert m.path() == tmp_path / "model-corpus" / "rapidocr-onnxruntime-1.4.4" / Path(m.member).name
    assert corpus.find(m.name) is None
    m.path().parent.mkdir(parents=True)
    m.path().write_bytes(b"x")
    assert corpus.find(m.name) == m.path()
    with pytest.raises(KeyError, match="no corpus model 'nope'; known: ppocr-det"):
        corpus.find("nope")


def test_unreachable_registry_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPSDK_CACHE_DIR", str(tmp_path))
    for key, value in {"PIP_CONFIG_FILE": "/dev/null", "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
                       "PIP_RETRIES": "0", "PIP_FIND_LINKS": "", "PIP_NO_CACHE_DIR": "1"}.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(FetchError, match=r"could not download rapidocr-onnxruntime==1\.4\.4: .*"
                       "check that pip reaches the package index"):
        corpus.fetch(timeout=120)
    assert corpus.main(["--fetch"]) == 1
    assert "model corpus: could not download" in capsys.readouterr().err
    assert not list((tmp_path / "model-corpus").rglob("*.onnx"))  # nothing half-written
