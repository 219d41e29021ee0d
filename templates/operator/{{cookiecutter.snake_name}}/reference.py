"""NumPy reference of {{ cookiecutter.op_name }}: the ground truth the kernel is checked against.

The template's operator copies its first input to every output of the same dtype
(broadcast to the output shape) and zero-fills the others. Replace this with the real
math, then update kernel.cpp to match.
"""

import numpy as np


def reference({{ cookiecutter._op.signature }}):
    """Return the expected outputs for the given inputs and attributes."""
{%- set first = cookiecutter._op.inputs[0] %}
    shape = np.broadcast_shapes({{ cookiecutter._op.shapes }})
    outputs = (
{%- for o in cookiecutter._op.outputs %}
{%- if o.type == first.type %}
        np.broadcast_to({{ first.name }}, shape).copy(),
{%- else %}
        np.zeros(shape),
{%- endif %}
{%- endfor %}
    )
    return outputs[0] if len(outputs) == 1 else outputs
