"""The PyTorch models of issue 24's corpus, built and exported as a user would.

torchvision's ResNet-18, MobileNetV3-small and a VisionTransformer (a small configuration of
torchvision's own class: 2 layers of width 64 on 64x64 images), a transformer encoder with
both GELU forms, and a spatial transformer (affine_grid + grid_sample). Weights are random
(seeded; no hub download), BatchNormalization running statistics are set to non-trivial
values. Each is exported with dynamic dims by the TorchScript exporter (opset 17) and the
dynamo exporter (its default opset).

torchvision comes from PyPI (``scripts/setup.d/40-torch-cpu.sh``) beside the CPU build of
torch. Its native ops library (``_C.so``, NMS, RoIAlign...) is built against PyPI's CUDA
torch and does not load there; the models are plain Python and never call it, but
torchvision's import registers fake kernels for those ops, which fails without the library.
:func:`torchvision` skips that one module (``torchvision._meta_registrations``).
"""

from __future__ import annotations

import io
import sys
import types
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/setup.d/40-torch-cpu.sh)")


def torchvision() -> Any:
    """torchvision's models, or skip with the reason."""
    sys.modules.setdefault("torchvision._meta_registrations",
                           types.ModuleType("torchvision._meta_registrations"))
    return pytest.importorskip(
        "torchvision", reason="torchvision is not installed (scripts/setup.d/40-torch-cpu.sh)")


@dataclass(frozen=True)
class TorchModel:
    """One model of the corpus: how to build it, its example input and its dynamic dims."""

    name: str
    shape: tuple[int, ...]
    dynamic: dict[int, str]
    #: the shape served and compared (another size than the export's, on the dynamic dims)
    run_shape: tuple[int, ...]
    #: the TorchScript exporter's opset: 17 (what CANN 8 reads), 20 where an op needs it
    torchscript_opset: int = 17


MODELS = (
    TorchModel("resnet18", (2, 3, 64, 64), {0: "batch", 2: "height", 3: "width"}, (1, 3, 96, 64)),
    TorchModel("mobilenet_v3_small", (2, 3, 64, 64), {0: "batch", 2: "height", 3: "width"},
               (1, 3, 96, 64)),
    TorchModel("vit", (2, 3, 64, 64), {0: "batch"}, (3, 3, 64, 64)),
    TorchModel("transformer", (2, 12, 64), {0: "batch", 1: "seq"}, (3, 20, 64)),
    # torch.onnx writes affine_grid only at opset 20 (AffineGrid), in both exporters
    TorchModel("spatial_transformer", (2, 1, 28, 28), {0: "batch"}, (3, 1, 28, 28), 20),
)
EXPORTERS = ("torchscript", "dynamo")


class _Encoder(torch.nn.Module):  # type: ignore[misc,name-defined]
    """Two encoder layers (exact GELU, torch's default) and a head with tanh GELU."""

    def __init__(self) -> None:
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, activation="gelu",
                                                 batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = torch.nn.Sequential(torch.nn.Linear(64, 96),
                                        torch.nn.GELU(approximate="tanh"),
                                        torch.nn.Linear(96, 16))

    def forward(self, x: Any) -> Any:
        return self.head(self.encoder(x))


class _SpatialTransformer(torch.nn.Module):  # type: ignore[misc,name-defined]
    """The spatial transformer network of the PyTorch tutorial: a localisation net predicts
    an affine transform, applied by affine_grid + grid_sample, then a small classifier."""

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.loc = nn.Sequential(nn.Conv2d(1, 8, 7), nn.MaxPool2d(2), nn.ReLU(),
                                 nn.Conv2d(8, 10, 5), nn.MaxPool2d(2), nn.ReLU())
        self.fc_loc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(), nn.Linear(32, 6))
        with torch.no_grad():
            self.fc_loc[2].weight.mul_(0.1)
            self.fc_loc[2].bias.copy_(torch.tensor([1.0, 0.1, 0.05, -0.1, 0.9, 0.0]))
        self.conv = nn.Sequential(nn.Conv2d(1, 10, 5), nn.BatchNorm2d(10), nn.ReLU(),
                                  nn.MaxPool2d(2))
        self.fc = nn.Linear(10 * 12 * 12, 10)

    def forward(self, x: Any) -> Any:
        theta = self.fc_loc(self.loc(x).flatten(1)).view(-1, 2, 3)
        grid = torch.nn.functional.affine_grid(theta, list(x.shape), align_corners=False)
        x = torch.nn.functional.grid_sample(x, grid, align_corners=False)
        return self.fc(self.conv(x).flatten(1))


def build(name: str) -> Any:
    """The model ``name`` in eval mode, seeded, with non-trivial BN statistics."""
    torch.manual_seed(24)
    if name in ("resnet18", "mobilenet_v3_small"):
        module = getattr(torchvision().models, name)(weights=None)
    elif name == "vit":
        module = torchvision().models.VisionTransformer(
            image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64,
            mlp_dim=128, num_classes=10)
    elif name == "transformer":
        module = _Encoder()
    elif name == "spatial_transformer":
        module = _SpatialTransformer()
    else:
        raise KeyError(name)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    return module.eval()


def example(model: TorchModel, shape: tuple[int, ...] | None = None, seed: int = 0
            ) -> np.ndarray:
    """A normal-distributed float32 input of ``shape`` (default the export shape)."""
    return np.random.default_rng(seed).standard_normal(shape or model.shape).astype(np.float32)


def export(model: TorchModel, exporter: str) -> tuple[onnx.ModelProto, Any]:
    """``(ONNX model, torch module)``: exported with input ``x``, output ``y``, dynamic dims
    named as in :attr:`TorchModel.dynamic`. The example has batch 2: torch.export specialises a
    dim whose example size is 1."""
    module = build(model.name)
    x = torch.from_numpy(example(model))
    f = io.BytesIO()
    # not under torch.no_grad(): there nn.MultiheadAttention takes its fused fast path
    # (aten::_native_multi_head_attention), which the TorchScript exporter cannot write
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation notes of the exporters
        if exporter == "torchscript":
            torch.onnx.export(module, (x,), f, dynamo=False, input_names=["x"],
                              output_names=["y"], opset_version=model.torchscript_opset,
                              dynamic_axes={"x": model.dynamic})
            proto = onnx.load_from_string(f.getvalue())
        else:
            dims = {axis: torch.export.Dim(f"{model.name}_{n}", min=1 if axis == 0 else 2)
                    for axis, n in model.dynamic.items()}
            program = torch.onnx.export(module, (x,), dynamo=True, input_names=["x"],
                                        output_names=["y"], dynamic_shapes={"x": dims},
                                        verbose=False)
            proto = program.model_proto
    return proto, module


def torch_output(module: Any, x: np.ndarray) -> np.ndarray:
    """The module's output on ``x`` (float32)."""
    with torch.no_grad():
        return module(torch.from_numpy(x)).numpy()
