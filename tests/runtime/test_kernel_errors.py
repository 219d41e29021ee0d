"""A kernel error names the operator once (issue 23 item 14: `KOp: KOp: ...`)."""

from __future__ import annotations

import numpy as np
import pytest

from opsdk.errors import KernelError


@pytest.mark.parametrize(("mode", "what"), [
    ("absent", "optional input 'bias' was not given"),
    ("throw", "boom on purpose"),
])
def test_kernel_error_names_the_operator_once(probe, mode: str, what: str) -> None:
    """Item 14: the context's own checks no longer prefix the op name the runner adds."""
    with pytest.raises(KernelError) as e:
        probe(np.zeros(3, np.float32), mode=mode)
    message = str(e.value)
    assert message.startswith(f"Probe: {what}"), message
    assert message.count("Probe:") == 1, message
