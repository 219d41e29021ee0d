"""Mutants of operator folders for tests/testing/test_validation_mutants.py.

:func:`mutant_copy` copies an operator folder and edits its ``kernel.cpp`` and ``spec.py``
so that environment variables select a mutation at run time, one build serving every
mutant of the operator:

* ``OPSDK_MUTANT`` (read by the kernel on each call): ``nan0`` maps NaN outputs to 0,
  ``tail`` leaves the last element of the first output 0 (an off-by-one loop bound),
  ``inplace`` (``inplace1``) writes into the first (second) input after computing the
  outputs, ``strides``
  declares AcceptsStrided (read when the library loads) and then reads the inputs as if
  contiguous, ``wide`` makes the shape function widen the first output's dtype.
* ``OPSDK_MUTANT_ATTR`` / ``OPSDK_MUTANT_VALUE``: the kernel reads that attribute as the
  given value (its default) whatever the call passes: an attribute ignored.
* ``OPSDK_MUTANT_BACKWARD``: the name of a wrong backward in :data:`BACKWARDS`; without it
  the copy's backward is the operator's own gradient (its decomposition's derivative).

:func:`run` is what ``opsdk test`` does for every generated case (``build_cases`` and
``run_case``) and what ``opsdk check`` does (``opsdk.check`` and the full gradient check),
in this process, stopping at the first failure; it returns the failure's text.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

WRAPPER = r'''
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

namespace opsdk_mutant {

inline bool is(const char* name) {
  const char* m = std::getenv("OPSDK_MUTANT");
  return m != nullptr && std::strcmp(m, name) == 0;
}

template <class T> void nan0(opsdk::Tensor& t) {
  T* p = t.mutable_data<T>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (std::isnan(static_cast<double>(opsdk::to_float(p[i])))) p[i] = T{};
}

template <class T> void zero_last(opsdk::Tensor& t) {
  if (t.numel() > 0) t.mutable_data<T>()[t.numel() - 1] = T{};
}

template <class F> void by_dtype(opsdk::Tensor& t, F f) {
  switch (t.dtype()) {
    case opsdk::DType::Float16: f(opsdk::half{}); break;
    case opsdk::DType::BFloat16: f(opsdk::bfloat16{}); break;
    case opsdk::DType::Float32: f(float{}); break;
    default: break;
  }
}

inline void after(const CustomOpKernelContext& ctx) {
  for (size_t k = 0; k < ctx.num_outputs(); ++k) {
    opsdk::Tensor& t = ctx.output(k);
    if (is("nan0")) by_dtype(t, [&](auto z) { nan0<decltype(z)>(t); });
    if (is("tail") && k == 0) by_dtype(t, [&](auto z) { zero_last<decltype(z)>(t); });
  }
  const size_t victim = is("inplace1") ? 1 : 0;
  if ((is("inplace") || is("inplace1")) && ctx.has_input(victim) &&
      ctx.input(victim).numel() > 0) {
    auto* p = static_cast<unsigned char*>(const_cast<void*>(ctx.input(victim).raw()));
    p[0] ^= 0x10;
  }
}

template <class A> A attr(const CustomOpKernelContext& ctx, const char* name) {
  const char* target = std::getenv("OPSDK_MUTANT_ATTR");
  const char* value = std::getenv("OPSDK_MUTANT_VALUE");
  if (target != nullptr && value != nullptr && std::strcmp(target, name) == 0) {
    if constexpr (std::is_same_v<A, float>) return std::strtof(value, nullptr);
    if constexpr (std::is_same_v<A, int64_t> || std::is_same_v<A, int>)
      return static_cast<A>(std::strtoll(value, nullptr, 10));
    if constexpr (std::is_same_v<A, std::string>) return std::string(value);
  }
  return ctx.template attr<A>(name);
}

}  // namespace opsdk_mutant

#define OPSDK_MUTANT_WRAP(fn)                                                  \
  [](const ::opsdk::CustomOpKernelContext& opsdk_ctx, auto... opsdk_types) {  \
    fn<typename decltype(opsdk_types)::type...>(opsdk_ctx);                    \
    opsdk_mutant::after(opsdk_ctx);                                            \
  }
'''

SPEC_TAIL = '''

# --- mutants (tests/_helpers/mutants.py) ---
import os as _os

from opsdk.spec import TensorType as _TT

_shape_fn = SPEC._shape_fn


def _mutant_shape(*types, **attrs):
    out = _shape_fn(*types, **attrs)
    outs = [out] if isinstance(out, _TT) else list(out)
    if _os.environ.get("OPSDK_MUTANT") == "wide":
        t = outs[0]
        outs[0] = _TT(t.shape, "float32" if t.dtype in ("float16", "bfloat16") else "float64")
    return outs


if _shape_fn is not None:
    SPEC._shape_fn = _mutant_shape
_own_backward = SPEC.backward


def _mutant_backward(inputs, outputs, grads, **attrs):
    from tests._helpers.mutants import BACKWARDS

    name = _os.environ.get("OPSDK_MUTANT_BACKWARD")
    if name:
        return BACKWARDS[name](inputs, outputs, grads, **attrs)
    if _own_backward is not None:
        return _own_backward(inputs, outputs, grads, **attrs)
    from opsdk.torch._autograd import _vjp

    return _vjp(SPEC, inputs, grads, attrs)


SPEC.register_backward(_mutant_backward)
'''


def _gelu_no_pdf(inputs, outputs, grads, **attrs):  # type: ignore[no-untyped-def]
    import torch

    x = inputs[0]
    return [grads[0] * 0.5 * (1 + torch.erf(x / 2 ** 0.5))]  # missing x * pdf(x)


def _softmax_no_sum(inputs, outputs, grads, **attrs):  # type: ignore[no-untyped-def]
    return [outputs[0] * grads[0]]  # missing - y * sum(g * y)


def _trelu_no_mask(inputs, outputs, grads, **attrs):  # type: ignore[no-untyped-def]
    return [grads[0]]  # missing the x > alpha mask


def _layer_norm_no_mean(inputs, outputs, grads, **attrs):  # type: ignore[no-untyped-def]
    x, scale = inputs[0], inputs[1]
    mean, inv = outputs[1].to(x.dtype), outputs[2].to(x.dtype)
    gy = grads[0]
    xhat = (x - mean) * inv
    dx = gy * scale * inv  # missing the mean and variance terms
    db = None if len(inputs) < 3 or inputs[2] is None else gy.sum_to_size(inputs[2].shape)
    return [dx, (gy * xhat).sum_to_size(scale.shape), db]


#: name -> a backward missing a term
BACKWARDS = {
    "gelu_no_pdf": _gelu_no_pdf,
    "softmax_no_sum": _softmax_no_sum,
    "trelu_no_mask": _trelu_no_mask,
    "layer_norm_no_mean": _layer_norm_no_mean,
}


def mutant_copy(src: Path, dest: Path) -> Path:
    """Copy the operator folder ``src`` to ``dest`` with the mutation switches added."""
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "op_kernel"))
    kernel = dest / "kernel.cpp"
    text = kernel.read_text()
    last = [m.end() for m in re.finditer(r"^#include [<\"].*$", text, re.M)][-1]
    text = text[:last] + "\n" + WRAPPER + text[last:]
    text = text.replace("OPSDK_KERNEL_TEMPLATE(", "OPSDK_MUTANT_WRAP(")
    text = re.sub(r"ctx\.attr<([A-Za-z_:0-9]+)>\(", r"opsdk_mutant::attr<\1>(ctx, ", text)
    text = re.sub(r'(REGISTER_CUSTOM_OP\("[A-Za-z0-9]+"\))',
                  r'\1.AcceptsStrided(opsdk_mutant::is("strides"))', text)
    kernel.write_text(text)
    spec = dest / "spec.py"
    spec.write_text(spec.read_text() + SPEC_TAIL)
    return dest


def run(folder: str, mutants: list[dict[str, str]]) -> dict[str, str | None]:
    """Each mutant's first failure under ``opsdk test``'s cases and ``opsdk check``'s
    checks (None: it passed), in this process; ``{"name": "none"}`` is the unmutated run."""
    import os

    from opsdk.errors import OpsdkError, ValidationError
    from opsdk.runtime._load import load
    from opsdk.testing import _runner, build_cases, check, run_case
    from opsdk.torch._gradcheck import full_gradcheck

    op = load(folder)
    results: dict[str, str | None] = {}
    for m in mutants:
        env = {k: v for k, v in m.items() if k != "name"}
        os.environ.update(env)
        _runner._INFER_CACHE.clear()
        failure = None
        try:
            for case in build_cases(op.spec):
                r = run_case(op.spec, op, case, keep_arrays=False)
                if not r.passed:
                    failure = "opsdk test: " + r.summary()
                    break
            if failure is None:
                try:
                    check(op)
                except ValidationError as e:
                    failure = f"opsdk check: {e}"
            if failure is None and op.spec.backward is not None:
                grad = full_gradcheck(op.spec)
                if not grad.passed:
                    failure = "opsdk check: gradcheck FAILED: " + "; ".join(grad.problems)
        except OpsdkError as e:
            failure = f"opsdk test: {type(e).__name__}: {e}"
        finally:
            for k in env:
                os.environ.pop(k, None)
        results[m["name"]] = failure
    return results


if __name__ == "__main__":
    import json
    import sys

    print("MUTANT-RESULTS " + json.dumps(run(sys.argv[1], json.loads(sys.argv[2]))))
