"""{{ cookiecutter.op_name }}: the operator's spec, the single source of truth.

{{ cookiecutter._op.doc or "TODO: say what the operator computes." }}
"""

from opsdk.spec import REQUIRED, Attr, Input, OpSpec, Output  # noqa: F401

SPEC = OpSpec(
    "{{ cookiecutter.op_name }}",
    domain="{{ cookiecutter.domain }}",
    version=1,
    inputs=[
{%- for i in cookiecutter._op.inputs %}
        Input("{{ i.name }}", "{{ i.type }}"{% if i.optional %}, optional=True{% endif %}),
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
