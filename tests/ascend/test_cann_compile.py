"""Generated C++ checked by a real compiler: against CANN's public headers (from an installed
toolkit or the torch-npu wheel) and, for the ONNX attribute parsing, compiled and run.

Compiled with ``g++ -fsyntax-only`` against the real headers: the REG_OP prototype, the plugin's
ge::Operator glue (``*_onnx_apply.h``) and the C signatures the npu executor binds. Not
compiled here: op_host (needs register/op_def_registry.h, tiling headers), op_kernel (needs
the Ascend C compiler), and the REGISTER_CUSTOM_OP line of ``*_plugin.cc`` (needs
register/register.h): no package on the index ships those headers.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import onnx
import onnx.helper as oh
import pytest

from opsdk.ascend.npu.executor import ACL_DTYPES, SIGNATURES
from opsdk.ascend.project.headers import HeadersUnavailable, fetch, find_headers
from tests._helpers.cann_project import write_project
from tests._helpers.specs import ROOT, rich_op, shipped

CXX = shutil.which("g++")
SHIPPED = sorted(p.name for p in (ROOT / "operators").iterdir() if (p / "spec.py").is_file())
pytestmark = pytest.mark.skipif(CXX is None, reason="no g++ on this host")


@pytest.fixture(scope="module")
def cann_include() -> Path:
    found = find_headers()
    if found is None:
        try:
            found = fetch(timeout=300)
        except HeadersUnavailable as e:
            pytest.skip(f"CANN headers unavailable: {e}")
    return found.include


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cann")
    kernels = root / "kernels"  # RichOp is a test-only spec without a kernel; any kernel.cpp
    kernels.mkdir()             # will do for the files compiled here
    (kernels / "kernel.cpp").write_text("// test-only\n")
    write_project(rich_op(), root / "rich_op", engine="both", kernel_folder=kernels,
                  aicore_skeleton=True)
    out = {"rich_op": root / "rich_op"}
    for name in SHIPPED:
        folder = ROOT / "operators" / name
        # FusedConvBnRelu has no AI Core kernel: its op_host and the skeleton compile all
        # the same
        write_project(shipped(name), root / name, engine="both", kernel_folder=folder,
                      aicore_skeleton=True)
        out[name] = root / name
    return out


def _syntax(src: Path, *includes: Path, std: str = "c++17") -> None:
    cmd = [CXX or "g++", f"-std={std}", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-x", "c++"]
    cmd += [f"-I{i}" for i in includes] + [str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{src.name} does not compile:\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("name", ["thresholded_relu", "rich_op"])
def test_op_proto_compiles(name: str, projects: dict[str, Path], cann_include: Path) -> None:
    _syntax(projects[name] / "op_graph" / f"{name}_proto.h", cann_include)



@pytest.mark.parametrize("name", sorted({"rich_op", *SHIPPED}))
def test_aicpu_op_proto_with_inference_compiles(
    name: str, projects: dict[str, Path], cann_include: Path
) -> None:
    proto = projects[name] / "aicpu" / "op_proto"
    _syntax(proto / f"{name}.cc", cann_include, proto)


@pytest.mark.parametrize("name", ["thresholded_relu", "rich_op"])
def test_plugin_glue_compiles(name: str, projects: dict[str, Path], cann_include: Path) -> None:
    plugin = projects[name] / "framework" / "onnx_plugin"
    _syntax(plugin / f"{name}_onnx_apply.h", cann_include, plugin, std="c++11")


def test_npu_executor_signatures_match_headers(tmp_path: Path, cann_include: Path) -> None:
    lines = [
        "#include <cstdint>",
        "#include <type_traits>",
        '#include "acl/acl.h"',
        '#include "acl/acl_op_compiler.h"',
    ]
    for name, (_, _, ctype) in SIGNATURES.items():
        lines.append(f'static_assert(std::is_same<decltype({name}), {ctype}>::value, "{name}");')
    enums = {
        "ACL_FLOAT16": ACL_DTYPES["float16"],
        "ACL_FLOAT": ACL_DTYPES["float32"],
        "ACL_BF16": ACL_DTYPES["bfloat16"],
        "ACL_INT64": ACL_DTYPES["int64"],
        "ACL_BOOL": ACL_DTYPES["bool"],
        "ACL_UINT8": ACL_DTYPES["uint8"],
        "ACL_DT_UNDEFINED": -1,
        "ACL_FORMAT_ND": 2,
        "ACL_FORMAT_UNDEFINED": -1,
        "ACL_MEMCPY_HOST_TO_DEVICE": 1,
        "ACL_MEMCPY_DEVICE_TO_HOST": 2,
        "ACL_MEM_MALLOC_HUGE_FIRST": 0,
        "ACL_ENGINE_SYS": 0,
        "ACL_COMPILE_SYS": 0,
    }
    for enum, value in enums.items():
        lines.append(f'static_assert({enum} == {value}, "{enum}");')
    src = tmp_path / "signatures.cpp"
    src.write_text("\n".join(lines) + "\n")
    _syntax(src, cann_include)


# --- the ONNX attribute parsing, compiled and run on the JSON GE's parser produces ---------


def _ge_attribute_json(node: Any, omit_defaults: bool = False) -> str:
    """The "attribute" string GE's ONNX parser gives ParseParamsByOperatorFn plugins
    (parser/common/convert/message2operator.cc + pb2json.cc): AttributeProto fields as JSON,
    enum type as its number, scalar float as "%g" text, bytes C-escaped, lists as numbers.
    ``omit_defaults`` mimics older parsers that drop scalars equal to the proto default."""
    items = []
    for a in node.attribute:
        item: dict[str, Any] = {"name": a.name, "type": int(a.type)}
        if a.type == onnx.AttributeProto.FLOAT and not (omit_defaults and a.f == 0.0):
            item["f"] = f"{a.f:g}"
        elif a.type == onnx.AttributeProto.INT and not (omit_defaults and a.i == 0):
            item["i"] = a.i
        elif a.type == onnx.AttributeProto.STRING:
            item["s"] = a.s.decode().replace("\\", "\\\\").replace('"', '\\"')
        elif a.type == onnx.AttributeProto.INTS and a.ints:
            item["ints"] = list(a.ints)
        elif a.type == onnx.AttributeProto.FLOATS and a.floats:
            item["floats"] = list(a.floats)
        items.append(item)
    return json.dumps({"attribute": items}, indent=2) if items else ""


HARNESS = """
#include <cstdio>
#include <fstream>
#include <sstream>
#include "rich_op_onnx_parse.h"
int main(int, char** argv) {
    std::ifstream f(argv[1]);
    std::stringstream ss;
    ss << f.rdbuf();
    opsdk_onnx::RichOpAttrs a;
    std::string err;
    if (!opsdk_onnx::MapRichOpAttrs(ss.str(), a, err)) {
        std::printf("ERROR %s\\n", err.c_str());
        return 2;
    }
    std::printf("{\\"axis\\": %lld, \\"epsilon\\": %.9g, \\"keepdims\\": %s, \\"pads\\": [",
                (long long)a.axis, a.epsilon, a.keepdims ? "true" : "false");
    for (size_t i = 0; i < a.pads.size(); ++i)
        std::printf("%s%lld", i ? ", " : "", (long long)a.pads[i]);
    std::printf("], \\"scales\\": [");
    for (size_t i = 0; i < a.scales.size(); ++i) std::printf("%s%.9g", i ? ", " : "", a.scales[i]);
    std::printf("]}\\n%s\\n", a.mode.c_str());
    return 0;
}
"""


@pytest.fixture(scope="module")
def harness(projects: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("harness")
    (work / "main.cpp").write_text(HARNESS)
    exe = work / "parse_rich_op"
    plugin = projects["rich_op"] / "framework" / "onnx_plugin"
    proc = subprocess.run(
        [
            CXX or "g++",
            "-std=c++11",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{plugin}",
            str(work / "main.cpp"),
            "-o",
            str(exe),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return exe


def _run(harness: Path, tmp_path: Path, text: str) -> tuple[int, str]:
    f = tmp_path / "attrs.json"
    f.write_text(text)
    proc = subprocess.run([str(harness), str(f)], capture_output=True, text=True)
    return proc.returncode, proc.stdout.strip()


def _parsed(out: str) -> dict[str, Any]:
    """The harness prints the attributes as JSON, then the string attribute raw on line 2."""
    first, _, mode = out.partition("\n")
    return dict(json.loads(first), mode=mode)


def test_parse_all_attribute_types(harness: Path, tmp_path: Path) -> None:
    node = oh.make_node(
        "RichOp",
        ["x", "i"],
        ["y", "c"],
        domain="com.example.test",
        axis=-2,
        epsilon=0.25,
        keepdims=0,
        mode='ne"arest',
        pads=[3, 4, 5],
        scales=[1.5],
    )
    code, out = _run(harness, tmp_path, _ge_attribute_json(node))
    assert code == 0, out
    assert _parsed(out) == {
        "axis": -2,
        "epsilon": 0.25,
        "keepdims": False,
        "mode": 'ne"arest',
        "pads": [3, 4, 5],
        "scales": [1.5],
    }


def test_parse_fills_defaults(harness: Path, tmp_path: Path) -> None:
    node = oh.make_node("RichOp", ["x", "i"], ["y", "c"], axis=0)
    code, out = _run(harness, tmp_path, _ge_attribute_json(node, omit_defaults=True))
    assert code == 0, out
    got = _parsed(out)
    assert got["axis"] == 0 and got["keepdims"] is True and got["mode"] == 'bi"linear'
    assert (
        got["pads"] == [1, 1] and got["scales"] == [0.5, 2.0] and abs(got["epsilon"] - 1e-5) < 1e-12
    )


def test_parse_rejects_missing_required_and_wrong_type(harness: Path, tmp_path: Path) -> None:
    code, out = _run(
        harness, tmp_path, _ge_attribute_json(oh.make_node("RichOp", [], [], epsilon=0.5))
    )
    assert code == 2 and "RichOp: the node has no attribute 'axis' (int)" in out
    code, out = _run(harness, tmp_path, "")
    assert code == 2 and "'axis'" in out
    bad = oh.make_node("RichOp", [], [], axis=1, pads=[1.5, 2.5])
    code, out = _run(harness, tmp_path, _ge_attribute_json(bad))
    assert code == 2 and "attribute 'pads' has ONNX attribute type 6, expected 7" in out
    code, out = _run(harness, tmp_path, '{"attribute": [')
    assert code == 2 and "malformed attribute JSON" in out
