"""tilecore/zoo/_build.py — what every zoo family shares: importing torch, seeded
weights, BatchNorm statistics, and the ONNX export itself.

Weights come from numpy's PCG64 generator (``numpy.random.default_rng``), not from
torch's generator: PCG64 and ``standard_normal`` give the same numbers on every
platform and numpy version since 1.17, so an export is the same bytes on any machine
with the same torch version.

BatchNorm running statistics are *measured*, not made up: after the seeded init, the
model runs once in training mode (float64, one thread, cumulative averaging) on a
seeded batch drawn like :func:`tilecore.zoo.sample_inputs`, then goes back to eval
mode and float32. The statistics are therefore non-trivial (mean != 0, var != 1, so
BatchNorm folding is really exercised) and normalise each layer as in a trained
network, which keeps activations in a sane range through 50 layers whatever the
init scale. *Rationale:* the statistics must not depend on the machine: the float64
pass on one thread is independent of the thread count, and rounding the statistics to
16 significant bits hides the last-bit differences another SIMD width or BLAS could
make in float64 (a difference survives only when a value sits on a rounding boundary).
"""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np

TORCH_VERSION_PINNED = "2.13.0"


class ZooError(RuntimeError):
    """A zoo request that cannot be served (unknown model, missing package, bad argument)."""


def import_torch():
    """``torch``, or a ZooError naming the package and how to install it."""
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ZooError(
            "tilecore.zoo needs PyTorch to build and export models (missing package 'torch', "
            f"tested with torch=={TORCH_VERSION_PINNED}; scripts/bootstrap.sh installs it "
            f"from a local wheel, or: pip install torch=={TORCH_VERSION_PINNED} "
            "--index-url https://download.pytorch.org/whl/cpu): " + str(e)) from None
    return torch


def import_onnx():
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ZooError("tilecore.zoo needs the 'onnx' package (pip install onnx): " + str(e)) from None
    return onnx


def import_onnxruntime():
    try:
        import onnxruntime
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ZooError("tilecore.zoo check needs the 'onnxruntime' package "
                       "(pip install onnxruntime): " + str(e)) from None
    return onnxruntime


def _kaiming_std(weight_shape, mode="fan_out", gain: float = 2.0):
    # torch.nn.init._calculate_fan_in_and_fan_out: fan_in = size(1) * receptive field,
    # fan_out = size(0) * receptive field (so a grouped conv counts per group).
    receptive = int(np.prod(weight_shape[2:])) if len(weight_shape) > 2 else 1
    fan = (weight_shape[0] if mode == "fan_out" else weight_shape[1]) * receptive
    return float(np.sqrt(gain / fan))


def seeded_init(model, seed, conv_mode="fan_out") -> None:
    """Fills every parameter of ``model`` from ``default_rng(seed)``, module by module in
    ``named_modules()`` order:

    - Conv: Kaiming normal (``conv_mode`` fan, ReLU gain, as torchvision's ResNet and
      MobileNetV2 do); a conv bias uniform in +-1/sqrt(fan_in), as PyTorch's default.
    - Linear: weight and bias uniform in +-1/sqrt(fan_in) (PyTorch's default init).
    - BatchNorm: gamma uniform in [0.5, 1.5], beta normal(0, 0.1) — not the identity,
      so that folding it changes the weights; running statistics come from
      :func:`measure_batchnorm`.
    - LayerNorm: gamma uniform in [0.8, 1.2], beta normal(0, 0.05).
    """
    torch = import_torch()
    nn = torch.nn
    rng = np.random.default_rng(seed)

    def put(param, array) -> None:
        with torch.no_grad():
            param.copy_(torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32)))

    for _, m in model.named_modules():
        if isinstance(m, (nn.Conv1d, nn.Conv2d)):
            shape = tuple(m.weight.shape)
            put(m.weight, rng.standard_normal(shape) * _kaiming_std(shape, conv_mode))
            if m.bias is not None:
                bound = 1.0 / np.sqrt(shape[1] * np.prod(shape[2:]))
                put(m.bias, rng.uniform(-bound, bound, shape[0]))
        elif isinstance(m, nn.Linear):
            bound = 1.0 / np.sqrt(m.in_features)
            put(m.weight, rng.uniform(-bound, bound, tuple(m.weight.shape)))
            if m.bias is not None:
                put(m.bias, rng.uniform(-bound, bound, m.out_features))
        elif isinstance(m, nn.modules.batchnorm._BatchNorm):
            put(m.weight, rng.uniform(0.5, 1.5, m.num_features))
            put(m.bias, rng.normal(0.0, 0.1, m.num_features))
        elif isinstance(m, nn.LayerNorm):
            put(m.weight, rng.uniform(0.8, 1.2, tuple(m.weight.shape)))
            put(m.bias, rng.normal(0.0, 0.05, tuple(m.bias.shape)))


@contextlib.contextmanager
def _one_thread(torch):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _round_mantissa(x, bits=16):
    """``x`` rounded to ``bits`` significant bits (float64 in, same dtype out)."""
    m, e = np.frexp(x)
    return np.ldexp(np.round(m * 2.0 ** bits) / 2.0 ** bits, e).astype(x.dtype)


def measure_batchnorm(model, batch):
    """Sets every BatchNorm's running statistics from one training-mode pass over
    ``batch`` (a numpy array), computed in float64 on one thread, then returns the model
    in eval mode and float32. A model without BatchNorm is only put in eval mode."""
    torch = import_torch()
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if bns:
        for m in bns:
            m.reset_running_stats()
            m.momentum = None  # cumulative average: one pass gives the batch statistics
        model.double().train()
        with torch.no_grad(), _one_thread(torch):
            model(torch.from_numpy(np.asarray(batch, dtype=np.float64)))
        with torch.no_grad():
            for m in bns:
                m.momentum = 0.1  # the exported attribute keeps PyTorch's usual value
                m.num_batches_tracked.zero_()
                m.running_mean.copy_(torch.from_numpy(_round_mantissa(m.running_mean.numpy())))
                m.running_var.copy_(torch.from_numpy(_round_mantissa(m.running_var.numpy())))
    return model.float().eval()


def export_onnx(model, inputs, input_names, output_names, opset=17):
    """The ONNX bytes of ``model`` traced on ``inputs`` (a tuple of numpy arrays).

    The classic TorchScript exporter (``dynamo=False``) at opset 17 is used: it gives the
    familiar standard graph (Conv, BatchNormalization, Relu, Gemm, MatMul, Softmax,
    LayerNormalization, Resize, ...) with ONNX node names taken from module paths
    (``/layer1/layer1.0/conv1/Conv``), needs no extra package, and its output is
    deterministic. The torch.export-based exporter (the default since torch 2.9) needs
    onnxscript and rewrites more of the graph on its own. BatchNorm stays a separate
    BatchNormalization node: ``training=TrainingMode.PRESERVE`` on a model in eval mode
    exports inference BatchNorm and keeps the exporter from folding it into the Conv
    (``TrainingMode.EVAL``, the default, folds it), so folding is left to tilecore.
    Shapes are static (no ``dynamic_axes``): the batch size is part of the cache key.
    """
    torch = import_torch()
    buf = io.BytesIO()
    args = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in inputs)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(
            model, args, buf, dynamo=False, opset_version=opset,
            input_names=list(input_names), output_names=list(output_names),
            training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=True)
    return buf.getvalue()
