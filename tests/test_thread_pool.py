"""The kernels' thread pool seen from Python: spin setting, parking, idle CPU, fork, threads.

The pool's own checks (coverage, exceptions, nesting, concurrent callers, thread-count
changes, fork, idle CPU) run in C++ in tests/cpp/test_pool.cpp (test_cross_aarch64.py);
these check the same promises through loaded operator modules.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import opsdk
from opsdk.runtime import cpu


@pytest.fixture(scope="module")
def relu():
    op = opsdk.load("ThresholdedRelu")
    yield op
    op.set_num_threads(2)


def test_spin_setting_reaches_loaded_and_later_modules(relu):
    before = relu.module.get_spin_microseconds()
    try:
        cpu.set_spin_microseconds(1234)
        assert relu.module.get_spin_microseconds() == 1234
        cpu.park_threads()  # accepted at any time, with or without polling workers
        x = np.linspace(-2, 2, 1 << 18, dtype=np.float32)
        np.testing.assert_array_equal(relu(x, alpha=0.5), relu.reference(x, alpha=0.5))
    finally:
        cpu.set_spin_microseconds(before)
    assert relu.module.get_spin_microseconds() == before


@pytest.mark.parametrize("bad", [-1, 1_000_001])
def test_spin_setting_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match=r"set_spin_microseconds: us must be in 0\.\.1000000"):
        cpu.set_spin_microseconds(bad)


def test_python_threads_share_the_pool(relu):
    """Python threads calling parallel kernels at once (the GIL is released): each call
    either gets the pool or runs its ranges inline; every result is exact."""
    relu.set_num_threads(2)
    x = np.random.default_rng(3).normal(size=(1 << 20) + 7).astype(np.float32)
    want = relu.reference(x, alpha=0.25)
    bad: list[int] = []

    def worker(k: int) -> None:
        out = np.empty_like(x)
        for _ in range(15):
            relu.run([x], {"alpha": 0.25}, [out])
            if not np.array_equal(out, want):
                bad.append(k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []


# Run in a fresh interpreter: fork() of a multi-threaded process and the process's CPU
# time are only meaningful without pytest's own threads and imports around.
_CHILD = textwrap.dedent(
    """
    import os, resource, time, warnings
    import numpy as np, opsdk
    from opsdk.runtime import cpu

    warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads: the point
    op = opsdk.load("ThresholdedRelu")
    op.set_num_threads(2)
    x = np.linspace(-3, 3, 1 << 20, dtype=np.float32)
    want = op.reference(x, alpha=0.5)

    def cpu_time():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    # 1. After the spin time an idle process uses no CPU.
    cpu.set_spin_microseconds(20_000)
    for _ in range(200):
        op(x, alpha=0.5)
    time.sleep(0.1)
    c0 = cpu_time(); time.sleep(0.4); idle = cpu_time() - c0
    # 2. While a worker polls it does use CPU, until park_threads().
    cpu.set_spin_microseconds(1_000_000)
    op(x, alpha=0.5)
    c0 = cpu_time(); polling = 0.0
    for _ in range(18):  # until it shows: under load the poller gets a small share of a core
        time.sleep(0.05); polling = cpu_time() - c0
        if polling > 0.03:
            break
    cpu.park_threads()
    time.sleep(0.02)
    c0 = cpu_time(); time.sleep(0.3); parked = cpu_time() - c0
    cpu.set_spin_microseconds(300)
    # 3. A child forked after the pool ran computes with it (or is killed by the alarm).
    pid = os.fork()
    if pid == 0:
        import signal
        signal.alarm(20)
        ok = all(np.array_equal(op(x, alpha=0.5), want) for _ in range(20))
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    print(f"idle={idle:.4f} polling={polling:.4f} parked={parked:.4f} child={status}")
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="fork and getrusage are POSIX")
def test_idle_cpu_parking_and_fork_in_a_fresh_process(relu):
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    fields = dict(kv.split("=") for kv in proc.stdout.split())
    assert float(fields["idle"]) < 0.04, f"an idle process used CPU: {proc.stdout}"
    assert float(fields["polling"]) > 0.03, f"a polling worker used no CPU: {proc.stdout}"
    assert float(fields["parked"]) < 0.04, f"parked workers used CPU: {proc.stdout}"
    assert fields["child"] == "0", f"the forked child failed or hung: {proc.stdout}"


def test_operator_modules_share_one_pool(relu):
    """Every operator module of the process runs its parallel_for on the first one's pool,
    so idle workers of different operators never poll side by side."""
    gelu = opsdk.load("Gelu")
    assert relu.module is not gelu.module
    assert relu.module.thread_pool_id() == gelu.module.thread_pool_id()
    x = np.linspace(-3, 3, (1 << 20) + 3, dtype=np.float32)
    threads = gelu.module.get_num_threads()
    gelu.set_num_threads(1)
    want = gelu(x)  # elementwise: the split into ranges cannot change a bit
    gelu.set_num_threads(max(threads, 2))
    for _ in range(3):  # alternating operators on the shared pool
        np.testing.assert_array_equal(relu(x, alpha=0.5), relu.reference(x, alpha=0.5))
        np.testing.assert_array_equal(gelu(x), want)



_PLACEMENT_CHILD = textwrap.dedent(
    """
    import os
    import numpy as np, opsdk

    def allowed(tid):
        with open(f"/proc/self/task/{tid}/status") as f:
            return next(l for l in f if l.startswith("Cpus_allowed_list")).split()[-1]

    op = opsdk.load("ThresholdedRelu")
    op.set_num_threads(2)
    x = np.linspace(-3, 3, 1 << 22, dtype=np.float32)
    want = op.reference(x, alpha=0.5)
    before = set(os.listdir("/proc/self/task"))
    op(x, alpha=0.5)
    workers = sorted(set(os.listdir("/proc/self/task")) - before)
    first = min(os.sched_getaffinity(0))
    # Put the caller and its worker on one CPU, as the scheduler at times does.
    os.sched_setaffinity(0, {first})
    for tid in workers:
        os.sched_setaffinity(int(tid), {first})
    ok = all(np.array_equal(op(x, alpha=0.5), want) for _ in range(40))
    print(f"first={first} ok={ok} workers=" + ";".join(allowed(t) for t in workers))
    """
)


def _cpu_list(text: str) -> set[int]:
    cpus: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CPU affinity is Linux's")
@pytest.mark.skipif(len(getattr(os, "sched_getaffinity", lambda _: [])(0)) < 2,
                    reason="keeping workers off the caller's CPU needs two CPUs")
@pytest.mark.parametrize("setting", ["default", "0"])
def test_a_worker_on_the_callers_cpu_moves_off_it(relu, setting):
    """A worker that joins a job on the CPU the caller started it on narrows its affinity
    to the other CPUs (OPSDK_PIN_THREADS=0: it stays where it was put)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("OPSDK_PIN_THREADS", None)
    if setting == "0":
        env["OPSDK_PIN_THREADS"] = "0"
    proc = subprocess.run([sys.executable, "-c", _PLACEMENT_CHILD], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    fields = dict(kv.split("=", 1) for kv in proc.stdout.split())
    assert fields["ok"] == "True", proc.stdout
    first = int(fields["first"])
    workers = [_cpu_list(w) for w in fields["workers"].split(";") if w]
    assert workers, f"no worker thread was started: {proc.stdout}"
    if setting == "0":
        assert all(w == {first} for w in workers), proc.stdout
    else:
        assert all(first not in w for w in workers), proc.stdout
