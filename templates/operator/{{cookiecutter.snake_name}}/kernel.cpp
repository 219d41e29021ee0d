// {{ cookiecutter.op_name }} CPU kernel.
//
// The template's kernel copies input '{{ cookiecutter._op.inputs[0].name }}' (broadcast) to every output of the
// same dtype and zero-fills the others, matching reference.py. Replace both with the real
// math; `opsdk test {{ cookiecutter.op_name }}` checks one against the other.
#include <opsdk/custom_op.h>

#include <string>
#include <vector>

namespace {

// Element offset in `src` of flat output index `i`, with NumPy broadcasting.
int64_t broadcast_offset(const opsdk::Tensor& src, const std::vector<int64_t>& out_shape,
                         int64_t i) {
  int64_t off = 0;
  const int64_t shift = static_cast<int64_t>(out_shape.size()) - src.ndim();
  for (int64_t d = static_cast<int64_t>(out_shape.size()) - 1; d >= 0; --d) {
    const int64_t idx = i % out_shape[static_cast<size_t>(d)];
    i /= out_shape[static_cast<size_t>(d)];
    const int64_t sd = d - shift;
    if (sd >= 0 && src.size(sd) != 1) off += idx * src.stride(sd);
  }
  return off;
}

template <class TIn, class TOut>
void copy_or_zero(const opsdk::Tensor& x, opsdk::Tensor& y, bool copy) {
  const TIn* px = x.data<TIn>();
  TOut* py = y.mutable_data<TOut>();
  const int64_t n = y.numel();
  opsdk::parallel_for(n, 1 << 15, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if constexpr (std::is_same_v<TIn, TOut>) {
        py[i] = copy ? px[broadcast_offset(x, y.shape(), i)] : TOut{};
      } else {
        py[i] = TOut{};
      }
    }
  });
}

template <{{ cookiecutter._op.kernel_params }}>
void {{ cookiecutter.snake_name }}_kernel(const CustomOpKernelContext& ctx) {
{%- for a in cookiecutter._op.attrs %}
  [[maybe_unused]] const {{ a.cpp }} {{ a.name }} = ctx.attr<{{ a.cpp }}>("{{ a.name }}");
{%- endfor %}
  const opsdk::Tensor& x = ctx.input(0);
{%- for o in cookiecutter._op.outputs %}
  copy_or_zero<{{ cookiecutter._op.first_cpp }}, {{ cookiecutter._op.out_cpp[loop.index0] }}>(x, ctx.output({{ loop.index0 }}), {{ "true" if o.type == cookiecutter._op.inputs[0].type else "false" }});
{%- endfor %}
}

}  // namespace

// One kernel per dtype column; names, optionality and attributes come from spec.py.
REGISTER_CUSTOM_OP("{{ cookiecutter.op_name }}")
    .Kernels<{{ cookiecutter._op.columns }}>(OPSDK_KERNEL_TEMPLATE({{ cookiecutter.snake_name }}_kernel));
