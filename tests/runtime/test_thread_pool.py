"""The kernels' thread pool seen from Python: spin setting, parking, idle workers, fork, threads.

The pool's own checks (coverage, exceptions, nesting, concurrent callers, thread-count
changes, fork, idle workers) run in C++ in tests/cpp/test_pool.cpp (test_cross_aarch64.py);
these check the same promises through loaded operator modules.
"""

from __future__ import annotations

import json
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


# Run in a fresh interpreter: fork() of a multi-threaded process is only meaningful
# without pytest's own threads and imports around. The pool's state tells whether its
# workers sleep and why (cpu.thread_pool_state()), so nothing here reads CPU time or a
# window of wall-clock time: each wait is for a worker going to sleep, with a cap only a
# worker that never sleeps reaches.
_CHILD = textwrap.dedent(
    """
    import json, os, time, warnings
    import numpy as np, opsdk
    from opsdk.runtime import cpu

    warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads: the point
    op = opsdk.load("ThresholdedRelu")
    op.set_num_threads(2)
    x = np.linspace(-3, 3, 1 << 20, dtype=np.float32)
    want = op.reference(x, alpha=0.5)

    def asleep():
        # the pool's state once every worker sleeps; None after 30 s (a worker never slept)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            s = cpu.thread_pool_state()
            if s["workers"] > 0 and s["sleeping"] == s["workers"]:
                return s
            time.sleep(0.001)
        return None

    def grew(before, after, key):
        return after is not None and after[key] > before[key]

    out = {}
    # 1. After the spin time the workers sleep, by themselves: 20 ms, then 1 s.
    for us in (20_000, 1_000_000):
        cpu.set_spin_microseconds(us)
        op(x, alpha=0.5)
        before = asleep()
        for _ in range(20):
            op(x, alpha=0.5)
        after = asleep()
        out[f"expired_{us}"] = (before is not None and grew(before, after, "spins_expired")
                                and after["spins_parked"] == before["spins_parked"])
    def polls(before):
        # True once a worker polls (or its polling already ran out); False after 30 s
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            s = cpu.thread_pool_state()
            if s["polling"] > 0 or s["spins_expired"] > before["spins_expired"]:
                return True
            time.sleep(0.001)
        return False

    # 2. park_threads() ends a 1 s polling early, called once a worker polls. A worker whose
    # spin time ran out before the call (this process descheduled that long) counts as
    # expired: a few tries.
    out["parked"] = False
    for _ in range(20):
        before = asleep()
        if before is None:
            break
        op(x, alpha=0.5)
        polled = polls(before)
        cpu.park_threads()
        if polled and grew(before, asleep(), "spins_parked"):
            out["parked"] = True
            break
    cpu.set_spin_microseconds(300)
    out["state"] = cpu.thread_pool_state()
    # 3. A child forked after the pool ran computes with it (or is killed by the alarm).
    pid = os.fork()
    if pid == 0:
        import signal
        signal.alarm(20)
        ok = all(np.array_equal(op(x, alpha=0.5), want) for _ in range(20))
        os._exit(0 if ok else 3)
    _, out["child"] = os.waitpid(pid, 0)
    print(json.dumps(out))
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX")
def test_idle_workers_sleep_parking_and_fork_in_a_fresh_process(relu):
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["expired_20000"], f"after a 20 ms spin the workers did not sleep: {got}"
    assert got["expired_1000000"], f"after a 1 s spin the workers did not sleep: {got}"
    assert got["parked"], f"park_threads() did not end a worker's polling: {got}"
    assert got["child"] == 0, f"the forked child failed or hung: {got}"


def test_thread_pool_state_before_and_after_a_parallel_call(relu):
    state = cpu.thread_pool_state()
    assert set(state) == {"workers", "sleeping", "polling", "spins_expired", "spins_parked"}
    relu.set_num_threads(2)
    relu(np.linspace(-2, 2, 1 << 18, dtype=np.float32), alpha=0.5)
    state = cpu.thread_pool_state()
    assert state["workers"] >= 1
    assert 0 <= state["sleeping"] + state["polling"] <= state["workers"]


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
