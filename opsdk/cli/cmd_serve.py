"""``opsdk serve REPO``: a real tritonserver on 127.0.0.1 until Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType
from typing import Any

from ._numbers import int_in, port, seconds


def register(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="serve a Triton model repository on 127.0.0.1",
        description="Start tritonserver (from the serving venv: $OPSDK_SERVE_VENV, "
        "<checkout>/.venv-serve or <cache>/serve-venv; create it with "
        "`bash .ci/serve_env.sh`) on 127.0.0.1, wait until every model is ready, and stop it "
        "cleanly on Ctrl-C or SIGTERM.",
    )
    p.add_argument("repository", help="model repository folder (opsdk triton build -o ...)")
    p.add_argument("--http-port", type=port, default=None, help="default: a free port")
    p.add_argument("--grpc-port", type=port, default=None, help="default: a free port")
    p.add_argument("--venv", default=None, help="serving venv (default: see above)")
    p.add_argument("--startup-timeout", type=seconds, default=120.0, help="seconds")
    p.add_argument("--exit-timeout", type=int_in(0, 2**31 - 1, "seconds"), default=5,
                   help="seconds to let in-flight requests finish on stop")
    p.add_argument("--log-verbose", type=int_in(0, 2**31 - 1, "a verbosity level"), default=0)
    p.set_defaults(func=run)


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def run(args: argparse.Namespace) -> int:
    from ..triton import TritonServer

    def progress(msg: str) -> None:
        print(f"  {msg}", file=sys.stderr, flush=True)

    server = TritonServer(
        args.repository,
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        venv=args.venv,
        startup_timeout=args.startup_timeout,
        exit_timeout=args.exit_timeout,
        log_verbose=args.log_verbose,
        progress=progress,
    )
    old = {s: signal.signal(s, _raise_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(f"starting tritonserver on {server.repository}", file=sys.stderr, flush=True)
        server.start()
        print(f"serving {server.repository} (pid {server.pid})")
        print(f"  HTTP  http://{server.http_url}")
        print(f"  gRPC  {server.grpc_url}")
        print(f"  log   {server.log_path}")
        print("Ctrl-C stops it.", flush=True)
        code = server.wait()
        print(f"tritonserver exited by itself with code {code}\n{server.log_tail()}",
              file=sys.stderr)
        return code or 1
    except (_Stop, KeyboardInterrupt) as e:
        print(f"stopping tritonserver (pid {server.pid}) on {e or 'SIGINT'}", file=sys.stderr)
        return 0
    finally:
        for s in old:
            signal.signal(s, signal.SIG_IGN)  # a second Ctrl-C must not cut the shutdown short
        try:
            stopped = server.stop()
            if stopped is not None:
                print(f"tritonserver stopped (exit code {stopped})", file=sys.stderr)
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
