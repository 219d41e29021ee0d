"""{{ cookiecutter.op_name }}: the operator's spec, the single source of truth.

{{ cookiecutter._op.doc or "TODO: say what the operator computes." }}
"""

from opsdk.spec import REQUIRED, Attr, Input, OpSpec, Output{% if cookiecutter._op.ranged %}, Values{% endif %}  # noqa: F401

SPEC = OpSpec(
    "{{ cookiecutter.op_name }}",
    domain="{{ cookiecutter.domain }}",
    version=1,
    inputs=[
{%- for i in cookiecutter._op.inputs %}
        Input("{{ i.name }}", "{{ i.type }}"{% if i.optional %}, optional=True{% endif %}{% if i.range %}, values=Values(range={{ i.range }}){% endif %}),
{%- endfor %}
    ],
    outputs=[
{%- for o in cookiecutter._op.outputs %}
        Output("{{ o.name }}", "{{ o.type }}"),
{%- endfor %}
    ],
    attrs=[
{%- for a in cookiecutter._op.attrs %}
        Attr("{{ a.name }}", "{{ a.type }}"{% if a.required %}, REQUIRED{% else %}, {{ a.default }}{% endif %}),
{%- endfor %}
    ],
    types={
{%- for k, v in cookiecutter._op.types.items() %}
        "{{ k }}": {{ v }},
{%- endfor %}
    },
    doc="{{ cookiecutter.op_name }} (TODO: one line on what it computes)",
{%- if cookiecutter._op.onnx_op %}
    onnx_op="{{ cookiecutter._op.onnx_op }}",
{%- endif %}
)
{%- if cookiecutter._op.backward %}


@SPEC.register_backward
def _backward(inputs, outputs, grads, **attrs):  # type: ignore[no-untyped-def]
    """The inputs' gradients from the outputs' (torch tensors; opsdk.torch calls it for
    autograd). The template's kernel copies {{ cookiecutter._op.inputs[0].name }} (broadcast) to{% if cookiecutter._op.backward.copies %} {{ cookiecutter._op.backward.copies_names }}{% else %} no output{% endif %},
    so its gradient is theirs summed over the broadcast axes and the other inputs get none.
    Replace it with the derivative of the real math; `opsdk check` runs gradcheck on it."""
    {{ cookiecutter._op.inputs[0].name }} = inputs[0]
{%- if cookiecutter._op.backward.copies %}
    grad = {% for i in cookiecutter._op.backward.copies %}{% if not loop.first %} + {% endif %}grads[{{ i }}]{% endfor %}
    return [grad.sum_to_size({{ cookiecutter._op.inputs[0].name }}.shape)] + [None] * {{ cookiecutter._op.backward.others }}
{%- else %}
    return [{{ cookiecutter._op.inputs[0].name }}.new_zeros({{ cookiecutter._op.inputs[0].name }}.shape)] + [None] * {{ cookiecutter._op.backward.others }}
{%- endif %}
{%- endif %}
