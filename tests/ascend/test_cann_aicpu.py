"""The AI CPU side of every operator: the project files around the operator's own kernel.cpp.

Checked here: every shipped operator (GridSample and FusedConvBnRelu included) gets an AI CPU
project whose adapter, op info and op proto agree with its spec, with the kernel.cpp the CPU
tests validated copied in unchanged. The adapter's CANN side compiles only against a
toolkit's AI CPU headers (``cpu_kernel.h``; no package on the index ships them): that test
runs on hosts with a toolkit and skips elsewhere with the reason. tests/aicpu_api/ holds
stand-ins of the toolkit's ``<arch>-linux/include/aicpu`` headers that declare what those
headers declare (checked against CANN 8.1.RC1; with a toolkit, the declarations are compared).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from opsdk.ascend.project.headers import aicpu_include
from tests._helpers.cann_project import write_project
from tests._helpers.specs import ROOT, shipped

SHIPPED = sorted(p.name for p in (ROOT / "operators").iterdir() if (p / "spec.py").is_file())


@pytest.fixture(scope="module")
def aicpu_projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("aicpu")
    for folder in SHIPPED:
        write_project(shipped(folder), root / folder, kernel_folder=ROOT / "operators" / folder)
    return {folder: root / folder for folder in SHIPPED}


def test_every_shipped_operator_is_covered() -> None:
    assert {"grid_sample", "fused_conv_bn_relu", "thresholded_relu"} <= set(SHIPPED)


@pytest.mark.parametrize("folder", SHIPPED)
def test_aicpu_project_of_every_shipped_operator(
    folder: str, aicpu_projects: dict[str, Path]
) -> None:
    spec, out = shipped(folder), aicpu_projects[folder]
    kernel = out / "aicpu" / "opsdk" / "kernels" / f"{folder}.cpp"
    assert kernel.read_text() == (ROOT / "operators" / folder / "kernel.cpp").read_text()
    for header in ("custom_op.h", "invoke.h"):
        assert (out / "aicpu" / "opsdk" / "include" / "opsdk" / header).is_file()
    assert (out / "aicpu" / "opsdk" / "runtime.cpp").is_file()
    adapter = (out / f"aicpu/cpukernel/impl/{folder}_kernels.cc").read_text()
    assert f'kKernel = "{spec.name}"' in adapter
    assert f"uint32_t {spec.name}CpuKernel::Compute(CpuKernelContext& ctx)" in adapter
    assert f"REGISTER_CPU_KERNEL({folder.upper()}, {spec.name}CpuKernel);" in adapter
    for a in spec.attrs:
        assert f'ctx.GetAttr("{a.name}")' in adapter, a.name
    for i, inp in enumerate(spec.inputs):
        assert f"ctx.Input({i})" in adapter
        assert (f"inputs[{i}].present = false" in adapter) == inp.optional
    ini = (out / f"aicpu/cpukernel/op_info_cfg/aicpu_kernel/{folder}.ini").read_text()
    assert f"[{spec.name}]" in ini and "opInfo.engine=DNN_VM_AICPU" in ini
    assert "opInfo.opKernelLib=CUSTAICPUKernel" in ini
    assert "opInfo.kernelSo=libcust_opsdk_aicpu_kernels.so" in ini  # one library per vendor
    assert "opInfo.functionName=RunCpuKernel" in ini
    names = re.findall(r"^input(\d+)\.name=(\w+)$", ini, re.M)
    assert [n for _, n in names] == [i.name for i in spec.inputs]
    proto = (out / f"aicpu/op_proto/{folder}.cc").read_text()
    assert f"COMMON_INFER_FUNC_REG({spec.name}, {spec.name}InferShape);" in proto
    assert "TODO(author)" not in proto, "every shipped operator has a C++ shape function"
    call = "opsdk::shape::Broadcast(in" if spec.elementwise else f"opsdk::shape::{spec.name}(in"
    assert call in proto
    assert (out / f"aicpu/op_proto/{folder}_shape.h").is_file() != spec.elementwise
    plugin = (out / f"framework/onnx_plugin/{folder}_plugin.cc").read_text()
    assert "ImplyType::AI_CPU" in plugin
    assert f'.OriginOpType("{spec.domain}::{spec.version}::{spec.name}")' in plugin


def test_grid_sample_adapter_reads_its_string_and_int_attributes(
    aicpu_projects: dict[str, Path],
) -> None:
    adapter = (aicpu_projects["grid_sample"] / "aicpu/cpukernel/impl/grid_sample_kernels.cc")
    text = adapter.read_text()
    assert 'attrs.emplace_back("mode", opsdk::AttrValue(v->GetString()));' in text
    assert 'attrs.emplace_back("align_corners", opsdk::AttrValue(static_cast<int64_t>' in text


def test_aicpu_include_finds_the_toolkit_headers(tmp_path: Path) -> None:
    assert aicpu_include(tmp_path) is None
    inc = tmp_path / "opp" / "built-in" / "op_impl" / "aicpu" / "aicpu_kernel" / "inc"
    inc.mkdir(parents=True)
    (inc / "cpu_kernel.h").write_text("")
    assert aicpu_include(tmp_path) == inc  # the installer's softlink
    files = tmp_path / "aarch64-linux" / "include" / "aicpu"  # where the OPP filelist puts them
    files.mkdir(parents=True)
    (files / "cpu_kernel.h").write_text("")
    assert aicpu_include(tmp_path) == files


def test_toolkit_include_finds_the_arch_folder(tmp_path: Path) -> None:
    from opsdk.ascend.project.headers import toolkit_include

    assert toolkit_include(tmp_path) is None
    inc = tmp_path / "aarch64-linux" / "include"
    for marker in ("graph/operator_reg.h", "graph/operator.h", "acl/acl.h",
                   "acl/acl_op_compiler.h"):
        (inc / marker).parent.mkdir(parents=True, exist_ok=True)
        (inc / marker).write_text("")
    assert toolkit_include(tmp_path) == inc


def _syntax_check(cxx: str, inc: Path, projects: dict[str, Path]) -> list[str]:
    errors = []
    for folder, out in projects.items():
        impl = out / "aicpu" / "cpukernel" / "impl"
        cmd = [cxx, "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", f"-I{inc}", f"-I{impl}"]
        cmd += [f"-I{out / 'aicpu' / 'opsdk' / 'include'}", str(impl / f"{folder}_kernels.cc")]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            errors.append(f"{folder}: {proc.stderr[-2000:]}")
    return errors


def test_adapters_compile_against_the_stand_in_headers(aicpu_projects: dict[str, Path]) -> None:
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no g++ on this host")
    errors = _syntax_check(cxx, API, aicpu_projects)
    assert not errors, "\n".join(errors)


def test_adapter_compiles_against_the_toolkit_aicpu_headers(
    aicpu_projects: dict[str, Path],
) -> None:
    inc = aicpu_include()
    if inc is None:
        pytest.skip("no CANN toolkit with the AI CPU kernel headers (cpu_kernel.h) on this host")
    cxx = shutil.which("aarch64-linux-gnu-g++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no g++ on this host")
    errors = _syntax_check(cxx, inc, aicpu_projects)
    assert not errors, "\n".join(errors)


_DECL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_ENUM = re.compile(r"\b(DT_\w+|FORMAT_\w+)\b")


def _declared(text: str) -> set[str]:
    """The names a header declares: functions/macros called or declared, enumerators."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    keywords = {"if", "for", "while", "switch", "return", "sizeof", "defined"}
    return (set(_DECL.findall(text)) - keywords) | set(_ENUM.findall(text))


def test_stand_ins_declare_what_the_toolkit_headers_declare() -> None:
    inc = aicpu_include()
    if inc is None:
        pytest.skip("no CANN toolkit with the AI CPU kernel headers (cpu_kernel.h) on this host")
    for ours in sorted(API.glob("*.h")):
        if ours.name.startswith("standin_"):
            continue
        theirs = inc / ours.name
        assert theirs.is_file(), f"{ours.name} stands in for a header the toolkit does not have"
        a, b = _declared(ours.read_text()), _declared(theirs.read_text())
        assert a == b, f"{ours.name}: only here {sorted(a - b)}, only in the toolkit {sorted(b - a)}"


# --- the adapter run end to end on this machine ---------------------------------------------
#
# tests/aicpu_api/ stands in for CANN's AI CPU kernel API: headers that declare what the
# toolkit's declare, and standin_runtime.cpp behind them. Compiled with the generated adapter,
# the operator's own
# kernel.cpp and opsdk's runtime, it runs every validation case of the operator through the
# adapter's path (CpuKernelContext -> RawTensor/NamedAttr -> opsdk::invoke -> the kernel)
# and judges the outputs against the NumPy reference with the CPU tests' standards.

API = Path(__file__).parents[1] / "aicpu_api"
RUN_OPS = ("thresholded_relu", "grid_sample", "fused_conv_bn_relu")
#: aicpu::DataType numbers (cpu_types.h) of opsdk dtypes.
AICPU_DT = {"float32": 0, "float16": 1, "int8": 2, "int32": 3, "uint8": 4, "int16": 6,
            "int64": 9, "float64": 11, "bool": 12, "bfloat16": 27}


@pytest.fixture(scope="module")
def adapter_driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no g++ on this host")
    root = tmp_path_factory.mktemp("adapter")
    sources = [str(API / "driver.cpp"), str(API / "standin_runtime.cpp")]
    for folder in RUN_OPS:
        out = root / folder
        write_project(shipped(folder), out, kernel_folder=ROOT / "operators" / folder)
        opsdk_dir = out / "aicpu" / "opsdk"
        sources += [str(out / f"aicpu/cpukernel/impl/{folder}_kernels.cc"),
                    str(opsdk_dir / "kernels" / f"{folder}.cpp")]
    sources.append(str(root / RUN_OPS[0] / "aicpu" / "opsdk" / "runtime.cpp"))
    include = root / RUN_OPS[0] / "aicpu" / "opsdk" / "include"
    impls = [f"-I{root / f / 'aicpu/cpukernel/impl'}" for f in RUN_OPS]
    flags = ["-std=c++17", "-O0", "-pthread", f"-I{API}", f"-I{include}", *impls]
    objects, procs = [], []
    for n, src in enumerate(sources):  # one compiler per source, run side by side
        objects.append(str(root / f"{n}.o"))
        procs.append(subprocess.Popen([cxx, *flags, "-c", src, "-o", objects[-1]],
                                      stderr=subprocess.PIPE, text=True))
    errors = [err for p in procs for err in [p.communicate()[1]] if p.returncode != 0]
    assert not errors, "\n".join(e[-3000:] for e in errors)
    exe = root / "driver"
    proc = subprocess.run([cxx, "-pthread", *objects, "-o", str(exe)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return exe


def _tensor_line(kind: str, dtype: str, shape: tuple, path: Path) -> str:
    return " ".join([kind, str(AICPU_DT[dtype]), str(len(shape)), *map(str, shape), str(path)])


class AdapterExecutor:
    """Runs one case through the compiled adapter: case file in, raw outputs back."""

    def __init__(self, driver: Path, spec: object, folder: Path) -> None:
        self.driver, self.spec, self.folder, self.calls = driver, spec, folder, 0

    def _attr_lines(self, attrs: dict) -> list[str]:
        lines = []
        for a in self.spec.attrs:  # type: ignore[attr-defined]
            v = attrs[a.name]
            vals = [v] if a.type in ("int", "float", "bool", "string") else list(v)
            text = " ".join(str(int(x)) if a.type == "bool" else str(x) for x in vals)
            lines.append(f"attr {a.name} {a.type} {len(vals)} {text}")
        return lines

    def run(self, inputs: list, attrs: dict | None = None) -> list:
        import numpy as np

        from opsdk.dtypes import dtype_name, to_numpy
        from opsdk.spec import TensorType

        spec = self.spec
        resolved = spec.resolve_attrs(attrs or {})  # type: ignore[attr-defined]
        self.calls += 1
        lines = [f"op {spec.name}"]  # type: ignore[attr-defined]
        padded = list(inputs) + [None] * (len(spec.inputs) - len(inputs))  # type: ignore[attr-defined]
        for i, a in enumerate(padded):
            if a is None:
                lines.append("in 0 0 -")
                continue
            path = self.folder / f"in{self.calls}_{i}.bin"
            np.ascontiguousarray(a).tofile(path)
            lines.append(_tensor_line("in", dtype_name(a.dtype), a.shape, path))
        types = [None if a is None else TensorType(a.shape, dtype_name(a.dtype)) for a in inputs]
        outs = spec.infer(types, resolved)  # type: ignore[attr-defined]
        paths = []
        for k, t in enumerate(outs):
            path = self.folder / f"out{self.calls}_{k}.bin"
            lines.append(_tensor_line("out", t.dtype, t.shape, path))
            paths.append((path, t))
        case = self.folder / f"case{self.calls}.txt"
        case.write_text("\n".join(lines + self._attr_lines(resolved)) + "\n")
        proc = subprocess.run([str(self.driver), str(case)], capture_output=True, text=True)
        assert proc.returncode == 0 and "status 0" in proc.stdout, (proc.stdout, proc.stderr)
        return [np.fromfile(p, dtype=to_numpy(t.dtype)).reshape(t.shape) for p, t in paths]


@pytest.mark.parametrize("folder", RUN_OPS)
def test_adapter_runs_every_validation_case(
    folder: str, adapter_driver: Path, tmp_path: Path
) -> None:
    from opsdk.registry import load_spec
    from opsdk.testing import build_cases, make_inputs
    from opsdk.testing._runner import run_arrays

    spec = load_spec(ROOT / "operators" / folder)
    ex = AdapterExecutor(adapter_driver, spec, tmp_path)
    failures, ran, worst = [], 0, 0.0
    for case in build_cases(spec):
        inputs = make_inputs(spec, case, 0)
        comps, problems = run_arrays(spec, ex, inputs, dict(case.attrs), keep_arrays=False)
        ran += 1
        worst = max([worst, *(c.max_abs_error or 0.0 for c in comps)])
        if problems or not all(c.passed for c in comps):
            failures.append(f"{case.id}: {problems or [c.summary() for c in comps]}")
    print(f"{spec.name}: {ran} cases through the AI CPU adapter, max abs error {worst:.3g}")
    assert ran > 0 and not failures, "\n".join(failures[:5])


def test_the_guide_lists_every_shipped_operator_with_its_cann_type() -> None:
    from opsdk.ascend import builtin_clash, default_engine

    guide = (ROOT / "docs" / "npu_host_guide.md").read_text()
    rows = {n: (e, t) for n, e, t in
            re.findall(r"^\| (\w+) \| `(\w+)`[^|]*\| `(\w+)`", guide, re.M)}
    for folder in SHIPPED:
        spec = shipped(folder)
        assert spec.name in rows, f"docs/npu_host_guide.md does not list {spec.name}"
        engine, _ = default_engine(spec, ROOT / "operators" / folder)
        cann_type = f"{spec.name}Custom" if builtin_clash(spec.name) else spec.name
        assert rows[spec.name] == (engine, cann_type), spec.name


# --- C++ shape functions against spec.py's ------------------------------------------------

SHAPE_OPS = sorted(f for f in SHIPPED if (ROOT / "operators" / f / "shape.h").is_file())
SHAPE_DRIVER = """
#include <iostream>
#include <sstream>
#include <string>
{includes}

int main() {{
  std::string line;
  while (std::getline(std::cin, line)) {{
    std::istringstream ls(line);
    std::string op, word;
    ls >> op;
    std::vector<opsdk::shape::Dims> dims;
    std::vector<bool> present;
    opsdk::shape::Attrs attrs;
    while (ls >> word) {{
      if (word == "in") {{
        int rank = 0;
        ls >> rank;
        present.push_back(rank >= 0);
        dims.emplace_back(rank < 0 ? 0 : rank);
        for (auto& d : dims.back()) ls >> d;
      }} else if (word == "int" || word == "ints") {{
        std::string name; int n = 0; ls >> name >> n;
        opsdk::shape::Dims v(n);
        for (auto& x : v) ls >> x;
        if (word == "int") attrs.set(name, v[0]); else attrs.set(name, v);
      }} else if (word == "float") {{
        std::string name; double v = 0; ls >> name >> v; attrs.set(name, v);
      }} else if (word == "string") {{
        std::string name, v; ls >> name >> v; attrs.set(name, v);
      }}
    }}
    opsdk::shape::Inputs in;
    for (size_t i = 0; i < dims.size(); ++i) in.push_back(present[i] ? &dims[i] : nullptr);
    std::vector<opsdk::shape::Dims> out;
    std::string error;
    if (op == "Broadcast") error = opsdk::shape::Broadcast(in, 1, out);
{dispatch}
    if (!error.empty()) {{ std::cout << "error " << error << "\\n"; continue; }}
    for (const auto& o : out) {{
      std::cout << o.size();
      for (auto d : o) std::cout << " " << d;
      std::cout << ";";
    }}
    std::cout << "\\n";
  }}
}}
"""


@pytest.fixture(scope="module")
def shape_driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no g++ on this host")
    from opsdk._paths import include_dir

    includes = "\n".join(f'#include "{ROOT / "operators" / f / "shape.h"}"' for f in SHAPE_OPS)
    names = [shipped(f).name for f in SHAPE_OPS]
    dispatch = "\n".join(
        f'    else if (op == "{n}") error = opsdk::shape::{n}(in, attrs, out);' for n in names
    )
    root = tmp_path_factory.mktemp("shape")
    src = root / "driver.cpp"
    src.write_text(SHAPE_DRIVER.format(includes=includes, dispatch=dispatch))
    exe = root / "driver"
    cmd = [cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{include_dir()}", str(src),
           "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return exe


def _shape_line(op: str, shapes: list, attrs: dict, spec: object = None) -> str:
    words = [op]
    for s in shapes:
        words += ["in", "-1"] if s is None else ["in", str(len(s)), *map(str, s)]
    for a in getattr(spec, "attrs", []):
        v = attrs[a.name]
        if a.type in ("int", "bool"):
            words += ["int", a.name, "1", str(int(v))]
        elif a.type == "ints":
            words += ["ints", a.name, str(len(v)), *map(str, v)]
        elif a.type == "float":
            words += ["float", a.name, repr(float(v))]
        elif a.type == "string":
            words += ["string", a.name, v]
    return " ".join(words)


def _run_shapes(driver: Path, lines: list[str]) -> list[str]:
    proc = subprocess.run([str(driver)], input="\n".join(lines) + "\n", capture_output=True,
                          text=True, check=True)
    return proc.stdout.splitlines()


@pytest.mark.parametrize("folder", SHAPE_OPS)
def test_cpp_shape_function_matches_spec_on_every_case(folder: str, shape_driver: Path) -> None:
    from opsdk.registry import load_spec
    from opsdk.spec import TensorType
    from opsdk.testing import build_cases

    spec = load_spec(ROOT / "operators" / folder)
    lines, expected = [], []
    for case in build_cases(spec):
        resolved = spec.resolve_attrs(dict(case.attrs))
        shapes = list(case.shapes) + [None] * (len(spec.inputs) - len(case.shapes))
        types = [None if s is None else TensorType(tuple(s), d or "float32")
                 for s, d in zip(shapes, list(case.dtypes) + [None] * len(shapes), strict=False)]
        outs = spec.infer(types, resolved)
        lines.append(_shape_line(spec.name, shapes, resolved, spec))
        expected.append("".join(f"{len(o.shape)}{''.join(f' {d}' for d in o.shape)};"
                                for o in outs))
    got = _run_shapes(shape_driver, lines)
    bad = [f"{line}: C++ {g!r}, spec.py {e!r}" for line, g, e in zip(lines, got, expected,
                                                                       strict=True) if g != e]
    assert lines and not bad, "\n".join(bad[:5])


def test_cpp_shape_functions_refuse_what_spec_refuses(shape_driver: Path) -> None:
    gs = {"mode": "linear", "padding_mode": "zeros", "align_corners": 0}
    conv = {"strides": [1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1], "group": 1}
    specs = {f: shipped(f) for f in SHAPE_OPS}
    lines = [
        _shape_line("GridSample", [(1, 2, 4, 4), (1, 3, 3, 3)], gs, specs["grid_sample"]),
        _shape_line("GridSample", [(2, 2, 4, 4), (1, 3, 3, 2)], gs, specs["grid_sample"]),
        _shape_line("FusedConvBnRelu", [(1, 4, 2, 2), (4, 4, 3, 3), None], conv,
                    specs["fused_conv_bn_relu"]),
        _shape_line("Softmax", [(2, 3)], {"axis": 2}, specs["softmax"]),
    ]
    out = _run_shapes(shape_driver, lines)
    assert all(o.startswith("error ") for o in out), out
    assert "last axis of 2" in out[0] and "batch 1, expected 2" in out[1]
    assert "smaller than the dilated kernel extent 3" in out[2] and "out of range" in out[3]


@pytest.mark.parametrize("shapes", [[(2, 3, 4), (3, 1), (1, 4), (4,)], [(5, 6), (), None],
                                    [(0, 3), (1, 3)], [(2, 3), (3, 2)]])
def test_cpp_broadcast_matches_numpy(shapes: list, shape_driver: Path) -> None:
    import numpy as np

    [got] = _run_shapes(shape_driver, [_shape_line("Broadcast", shapes, {})])
    try:
        want = np.broadcast_shapes(*[s for s in shapes if s is not None])
    except ValueError:
        assert got.startswith("error ") and "does not broadcast" in got
        return
    assert got == f"{len(want)}{''.join(f' {d}' for d in want)};"
