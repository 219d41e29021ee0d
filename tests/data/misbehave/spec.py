"""Misbehave: a test-only copy operator whose float64 kernel misbehaves on request.

``$OPSDK_MISBEHAVE`` picks what the float64 kernel does: ``segv``, ``abort``, ``loop`` (says ``misbehave: looping`` on stderr first),
``past_end`` (writes one element past its output), ``far_past_end`` (100000 past),
``read_past_end``, ``write_input``, ``int_overflow``, ``exit0`` (``exit(0)``), ``_exit0``,
``exit_group0`` (the exit_group system call, as a library the kernel calls may end it),
``fork`` (leaves a child running), ``fork_loop`` (forks, then loops), ``segv_on_13`` (a SIGSEGV when the first element is 13);
unset, it copies like the float32 kernel.
"""

from opsdk.spec import Input, OpSpec, Output

SPEC = OpSpec(
    "Misbehave",
    domain="com.opsdk.test",
    inputs=[Input("x", "T")],
    outputs=[Output("y", "T")],
    types={"T": ("float32", "float64")},
)
