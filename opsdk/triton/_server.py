"""A real tritonserver on 127.0.0.1, started from the serving venv and stopped by PID."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from ..runtime._procs import dies_with_us
from ._env import ServeEnvironment, locate_serve_env
from ._errors import TritonConfigError, TritonServerError

__all__ = ["TritonServer", "free_port"]

SHM_DIR = Path("/dev/shm")
_START_ATTEMPTS = 3


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TritonServer:
    """A tritonserver serving ``repository`` on loopback; a context manager.

    Ports default to free ones. Ready means every model in the repository loaded
    (strict readiness). ``stop()`` sends SIGINT to the server's PID, waits for the exit
    timeout, then kills its process group, and removes its shared-memory segments.

    Example:
        >>> import tritonclient.http as http  # doctest: +SKIP
        >>> with TritonServer("repo/") as server:  # doctest: +SKIP
        ...     with http.InferenceServerClient(server.http_url) as client:
        ...         client.is_model_ready("resnet")
        True
    """

    def __init__(
        self,
        repository: str | Path,
        *,
        http_port: int | None = None,
        grpc_port: int | None = None,
        venv: str | Path | None = None,
        startup_timeout: float = 120.0,
        exit_timeout: int = 5,
        log_verbose: int = 0,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.repository = Path(repository).resolve()
        if not self.repository.is_dir():
            raise TritonConfigError(
                f"model repository {self.repository} is not a folder; make one with "
                "`opsdk triton build model.onnx -o REPO --name NAME`"
            )
        self._fixed_ports = (http_port, grpc_port)
        self._venv = venv
        self.startup_timeout = startup_timeout
        self.exit_timeout = exit_timeout
        self.log_verbose = log_verbose
        self._progress = progress or (lambda _msg: None)
        self.http_port = self.grpc_port = 0
        self.shm_prefix = f"opsdk_triton_{os.getpid()}_{secrets.token_hex(4)}_"
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self.env: ServeEnvironment | None = None

    # -- public ---------------------------------------------------------------------------
    @property
    def http_url(self) -> str:
        """``127.0.0.1:<port>`` as tritonclient.http expects it."""
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        """``127.0.0.1:<port>`` as tritonclient.grpc expects it."""
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def log_path(self) -> Path | None:
        return self._workdir / "tritonserver.log" if self._workdir else None

    def start(self) -> TritonServer:
        """Launch tritonserver and wait until it is ready; raise TritonServerError if not."""
        if self._proc is not None:
            raise TritonServerError(f"server for {self.repository} is already started")
        self.env = locate_serve_env(self._venv)
        self._workdir = Path(tempfile.mkdtemp(prefix="opsdk-triton-"))
        _link_python_backend(self.env, self._workdir / "backends" / "python")
        for attempt in range(1, _START_ATTEMPTS + 1):
            self._launch()
            try:
                self._wait_ready()
                return self
            except TritonServerError as e:
                self.stop(keep_workdir=True)
                log = self.log_errors()
                if "address already in use" not in log.lower() or attempt == _START_ATTEMPTS:
                    self._cleanup_workdir()
                    raise TritonServerError(f"{e}\n--- tritonserver errors ---\n{log}") from e
            except BaseException:  # Ctrl-C while it loads: no server left behind
                self.stop()
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def stop(self, keep_workdir: bool = False) -> int | None:
        """Stop the server (SIGINT, then SIGKILL after the exit timeout); return its exit code."""
        proc, self._proc = self._proc, None
        code = None
        if proc is not None:
            code = _terminate(proc, self.exit_timeout + 15.0)
        self._remove_shm()
        if not keep_workdir:
            self._cleanup_workdir()
        return code

    def wait(self) -> int:
        """Block until the server exits by itself; return its exit code."""
        if self._proc is None:
            raise TritonServerError("the server is not running")
        return self._proc.wait()

    def poll(self) -> int | None:
        """The exit code if the server has exited, else None."""
        return self._proc.poll() if self._proc else None

    def log_tail(self, chars: int = 4000) -> str:
        """The end of tritonserver's log."""
        path = self.log_path
        if path is None or not path.is_file():
            return "(no log)"
        return path.read_text(errors="replace")[-chars:]

    def log_errors(self) -> str:
        """The error lines of tritonserver's log (model load failures, port clashes)."""
        lines = self.log_tail(chars=200_000).splitlines()
        errors = [
            ln.replace("\\n", "\n      ")
            for ln in lines
            if (ln[:1] == "E" and ln[1:2].isdigit() and "CudaDriverHelper" not in ln)
            or ln.lower().startswith("error")
        ]
        return "\n".join(errors[-20:]) or self.log_tail(2000)

    def __enter__(self) -> TritonServer:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- private --------------------------------------------------------------------------
    def _launch(self) -> None:
        assert self.env is not None and self._workdir is not None
        http, grpc = self._fixed_ports
        self.http_port = http or free_port()
        self.grpc_port = grpc or free_port()
        while self.grpc_port == self.http_port:
            self.grpc_port = free_port()
        with open(self._workdir / "tritonserver.log", "wb") as log:
            self._proc = subprocess.Popen(
                self._command(),
                env=_server_env(self.env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self._workdir,
                start_new_session=True,  # Ctrl-C reaches us; we forward it by PID
                **dies_with_us(),  # kill -9 of us ends it; its stubs follow their server
            )

    def _command(self) -> list[str]:
        assert self.env is not None and self._workdir is not None
        return [
            str(self.env.tritonserver),
            f"--model-repository={self.repository}",
            f"--backend-directory={self._workdir / 'backends'}",
            "--http-address=127.0.0.1",
            f"--http-port={self.http_port}",
            "--grpc-address=127.0.0.1",
            f"--grpc-port={self.grpc_port}",
            "--allow-metrics=false",
            "--allow-sagemaker=false",
            "--allow-vertex-ai=false",
            "--model-control-mode=none",
            "--strict-readiness=true",
            "--exit-on-error=true",
            f"--exit-timeout-secs={self.exit_timeout}",
            f"--log-verbose={self.log_verbose}",
            f"--backend-config=python,shm-region-prefix-name={self.shm_prefix}",
        ]

    def _wait_ready(self) -> None:
        assert self._proc is not None
        start = time.monotonic()
        next_note = start + 1.0
        url = f"http://{self.http_url}/v2/health/ready"
        while True:
            code = self._proc.poll()
            if code is not None:
                raise TritonServerError(
                    f"tritonserver for {self.repository} exited with code {code} before it "
                    "was ready (a model failed to load, or a port was taken)"
                )
            if _http_ok(url):
                self._progress(f"tritonserver ready after {time.monotonic() - start:.1f} s")
                return
            now = time.monotonic()
            if now - start > self.startup_timeout:
                raise TritonServerError(
                    f"tritonserver for {self.repository} was not ready after "
                    f"{self.startup_timeout:.0f} s"
                )
            if now >= next_note:
                self._progress(f"waiting for tritonserver to load models ({now - start:.0f} s)")
                next_note = now + 2.0
            time.sleep(0.1)

    def _remove_shm(self) -> None:
        for seg in SHM_DIR.glob(f"{self.shm_prefix}*"):
            seg.unlink(missing_ok=True)

    def _cleanup_workdir(self) -> None:
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None


def _link_python_backend(env: ServeEnvironment, dest: Path) -> None:
    """backends/python/: the wheel's backend, with the stub for this Python beside it."""
    dest.mkdir(parents=True)
    for item in env.python_backend.iterdir():
        if item.name != "__pycache__":
            (dest / item.name).symlink_to(item)
    (dest / "triton_python_backend_stub").symlink_to(env.stub)


def _server_env(env: ServeEnvironment) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    libs = [str(env.libs_dir), str(env.libpython_dir)]
    if out.get("LD_LIBRARY_PATH"):
        libs.append(out["LD_LIBRARY_PATH"])
    out["LD_LIBRARY_PATH"] = os.pathsep.join(libs)
    out["PATH"] = os.pathsep.join([str(env.venv / "bin"), out.get("PATH", "")])
    out["VIRTUAL_ENV"] = str(env.venv)
    return out


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def _terminate(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """SIGINT the server by PID, wait, then SIGKILL its process group (its stubs)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _killpg(proc.pid)
            proc.wait(timeout=10)
    deadline = time.monotonic() + 5.0
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)  # the Python-backend stubs exit after the server
    if _group_alive(proc.pid):
        _killpg(proc.pid)
    return int(proc.returncode)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
