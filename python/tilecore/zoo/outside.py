"""tilecore/zoo/outside.py — models written by others: the public definitions of
torchvision, timm and transformers, instantiated offline with seeded random weights and
exported to ONNX, so that the compiler is tried on graphs nobody here wrote.

    names(select=None)                  the model names, optionally filtered (see :func:`names`)
    info(name)                          source, family, inputs, outputs
    sample_inputs(name, n, seed)        n seeded input samples, keyed by input name
    build(name, path=None, seed=0)      (path of the .onnx file, the evaluation inputs)
    versions()                          the installed versions of the packages used, and the pinned ones

Nothing is downloaded: every model is built from its class with random weights (no
pretrained weights, no hub; ``HF_HUB_OFFLINE=1`` is set before transformers is imported),
transformers' models from small configs (2 layers, hidden 64-128, sequence 32).

Weights: ``torch.manual_seed(seed)`` before the library builds the model (so its own
init draws them), then every parameter the library left constant (zero biases and class
tokens, layer scales of 1e-6, norm gains of 1) is redrawn from numpy's PCG64 and every
BatchNorm's gain and shift too, and the BatchNorm statistics are measured on a seeded
batch (:func:`tilecore.zoo._build.measure_batchnorm`). *Rationale:* an untrained model
whose residual branches are scaled by 1e-6, or whose BatchNorms are identities, would
hide a wrong kernel behind a correct-looking output.

Export: batch 1, static shapes, opset 17, the classic TorchScript exporter first
(:func:`tilecore.zoo._build.export_onnx`); a model it refuses (transformers' Llama and
its descendants, for ``aten::diff``) is exported by the torch.export-based exporter
(``dynamo=True``, needs onnxscript). Exports are cached under
``$TILECORE_CACHE/zoo/outside`` keyed by name, seed, the format number below and the
versions of the packages involved, so a cached file is never stale. Each file records in
its metadata which exporter made it (``tilecore.exporter``) and how closely ONNX Runtime
reproduces PyTorch on the evaluation inputs (``tilecore.torch_vs_onnxruntime``, the lowest
output cosine): a reference that already differs from PyTorch is a fragile one.

torchvision's compiled operators do not load against the CPU-only torch wheel; its
package is imported with ``torch.library.register_fake`` briefly replaced by a no-op
decorator (only its pure-Python model definitions are used). timm imports torchvision,
so it is imported after it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import io
import os
import warnings
import zlib
from typing import Any, Callable

import numpy as np

from . import ZooError, _draw, _write_atomic, cache_dir
from ._build import export_onnx, import_onnx, import_torch, measure_batchnorm

__all__ = ["OutsideModel", "import_torchvision", "names", "info", "sample_inputs", "build", "versions", "cache_path", "PINNED",
           "SOURCES", "CALIB_SEED", "EVAL_SEED"]

# Bumped whenever a definition, the weight treatment or the export settings change.
OUTSIDE_FORMAT = 1

# The versions the corpus was built and measured with (benchmarks/model_corpus.py prints
# the installed ones next to these).
PINNED = {
    "torch": "2.13.0", "torchvision": "0.28.0", "timm": "1.0.31", "transformers": "5.24.0",
    "onnxscript": "0.7.2", "onnx": "1.23.2", "onnxruntime": "1.32.0", "numpy": "2.4.6",
}

SOURCES = ("torchvision", "timm", "transformers")

# Samples of the BatchNorm statistics pass. *Rationale:* a BatchNorm after the global
# pooling (LeViT's head) sees one row per sample: two samples gave variances so small
# that the logits reached 500 and ONNX Runtime and PyTorch themselves differed (cosine
# 0.99984).
BN_SAMPLES = 8

# Samples drawn with seed CALIB_SEED calibrate; sample 0 of seed EVAL_SEED is compared.
CALIB_SEED = 0
EVAL_SEED = 1


@dataclasses.dataclass(frozen=True)
class OutsideModel:
    """One model of the corpus.

    ``inputs``: ((name, shape at batch 1, kind), ...), kind ``image`` (ImageNet-normalised
    pixels), ``normal`` (standard normal: audio, spectrograms) or ``tokens:V`` (int64 ids
    uniform in [0, V)). ``make`` builds the torch module (in train mode, weights untouched);
    ``pick`` says which part of its output is exported (see :func:`_outputs`)."""

    name: str
    source: str
    family: str
    description: str
    make: Callable[[], Any]
    inputs: tuple
    outputs: tuple
    pick: Any = None


def _image(size):
    return (("input", (1, 3, size, size), "image"),)


# ---------------------------------------------------------------------------------------
# The library imports


def import_torchvision() -> Any:
    """``torchvision``, imported with ``torch.library.register_fake`` a no-op decorator
    (its compiled operators do not load against the CPU-only torch wheel)."""
    import sys

    if "torchvision" in sys.modules:
        return sys.modules["torchvision"]
    torch = import_torch()
    orig = torch.library.register_fake

    def no_fake(*args, **kwargs):
        if args and callable(args[0]) and not isinstance(args[0], str):
            return args[0]
        return lambda f: f

    torch.library.register_fake = no_fake
    try:
        import torchvision
    except ImportError as e:
        raise ZooError(f"tilecore.zoo.outside needs torchvision (pip install --no-deps "
                       f"torchvision=={PINNED['torchvision']}): {e}") from None
    finally:
        torch.library.register_fake = orig
    return torchvision


def _import(package):
    try:
        if package in ("timm", "transformers"):
            import importlib.util
            if importlib.util.find_spec("torchvision") is not None:
                import_torchvision()  # both import it; it must come in through the no-op register_fake
        if package == "transformers":
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        return importlib.import_module(package)
    except ImportError as e:
        raise ZooError(f"tilecore.zoo.outside needs {package} (pip install {package}=={PINNED[package]}): "
                       f"{e}") from None


# ---------------------------------------------------------------------------------------
# Builders, one per source


def _tv(fn, sub="", backbone=False, **kwargs):
    def make():
        tv = import_torchvision()
        mod = getattr(tv.models, sub) if sub else tv.models
        if sub in ("segmentation", "detection"):
            kwargs.setdefault("weights_backbone", None)
        model = getattr(mod, fn)(weights=None, **kwargs)
        return model.backbone if backbone else model
    return make


def _timm(name, **kwargs):
    return lambda: _import("timm").create_model(name, pretrained=False, **kwargs)


def _hf(model_cls, config_cls, **config):
    def make():
        tf = _import("transformers")
        return getattr(tf, model_cls)(getattr(tf, config_cls)(**config))
    return make


def _hf_part(model_cls, config_cls, part, **config):
    make_whole = _hf(model_cls, config_cls, **config)
    return lambda: getattr(make_whole(), part)()


_TEXT = dict(vocab_size=1000, max_position_embeddings=64)
_BERT = dict(_TEXT, hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256)
_DECODER = dict(_TEXT, hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                intermediate_size=256, use_cache=False)
_VIT = dict(image_size=64, patch_size=8, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=256, num_labels=10)


def _tokens(seq=32, vocab=1000):
    return (("input_ids", (1, seq), f"tokens:{vocab}"),)


def _pixels(size=64):
    return (("pixel_values", (1, 3, size, size), "image"),)


_LOGITS = (("logits",), "logits")
_HIDDEN = (("last_hidden_state",), "last_hidden_state")


def _registry():
    models = []

    def tv(name, family, description, size=224, sub="", backbone=False, outputs=("logits",), pick=None,
           fn=None, **kwargs):
        models.append(OutsideModel(name, "torchvision", family, description,
                                   _tv(fn or name, sub, backbone, **kwargs), _image(size), outputs, pick))

    def tm(name, family, size=224, **kwargs):
        models.append(OutsideModel(f"timm/{name}", "timm", family, f"timm {name}, {size}x{size}",
                                   _timm(name, **kwargs), _image(size), ("logits",)))

    def hf(name, family, description, make, inputs, out):
        outputs, pick = out
        models.append(OutsideModel(f"hf/{name}", "transformers", family, description, make, inputs,
                                   outputs, pick))

    # torchvision: classification
    tv("resnet50", "ResNet", "ResNet-50")
    tv("mobilenet_v3_small", "MobileNetV3", "MobileNetV3-Small")
    tv("mobilenet_v3_large", "MobileNetV3", "MobileNetV3-Large")
    tv("mnasnet0_5", "MNASNet", "MNASNet 0.5")
    tv("shufflenet_v2_x1_0", "ShuffleNetV2", "ShuffleNetV2 1.0x")
    tv("densenet121", "DenseNet", "DenseNet-121")
    tv("efficientnet_b0", "EfficientNet", "EfficientNet-B0")
    tv("regnet_y_400mf", "RegNet", "RegNetY-400MF")
    tv("resnext50_32x4d", "ResNeXt", "ResNeXt-50 32x4d")
    tv("googlenet", "Inception", "GoogLeNet (Inception v1), no auxiliary heads", aux_logits=False,
       init_weights=True)
    tv("inception_v3", "Inception", "Inception v3, 299x299, no auxiliary head", size=299, aux_logits=False,
       init_weights=True)
    tv("convnext_tiny", "ConvNeXt", "ConvNeXt-Tiny")
    tv("swin_t", "Swin", "Swin-T")
    tv("swin_v2_t", "SwinV2", "Swin-V2-T, 256x256", size=256)
    tv("maxvit_t", "MaxViT", "MaxViT-T")
    tv("squeezenet1_1", "SqueezeNet", "SqueezeNet 1.1")
    tv("vit_b_16", "ViT", "ViT-B/16")
    # torchvision: segmentation (the main output; no auxiliary head), 256x256
    tv("deeplabv3_mobilenet_v3_large", "DeepLabV3", "DeepLabV3, MobileNetV3-Large backbone, 21 classes, 256x256",
       size=256, sub="segmentation", outputs=("out",), pick="out", aux_loss=False)
    tv("lraspp_mobilenet_v3_large", "LR-ASPP", "LR-ASPP, MobileNetV3-Large backbone, 21 classes, 256x256",
       size=256, sub="segmentation", outputs=("out",), pick="out")
    tv("fcn_resnet50", "FCN", "FCN, ResNet-50 backbone (dilated, output stride 8), 21 classes, 256x256",
       size=256, sub="segmentation", outputs=("out",), pick="out", aux_loss=False)
    # torchvision: detection backbones (the feature pyramid each detector's heads read), 320x320
    fpn = tuple(f"p{i}" for i in range(5))
    tv("fasterrcnn_mobilenet_v3_large_fpn.backbone", "FPN", "Faster R-CNN's MobileNetV3-Large + FPN backbone, "
       "320x320", size=320, sub="detection", backbone=True, outputs=fpn[:3],
       fn="fasterrcnn_mobilenet_v3_large_fpn")
    tv("retinanet_resnet50_fpn.backbone", "FPN", "RetinaNet's ResNet-50 + FPN (P3-P7) backbone, 320x320",
       size=320, sub="detection", backbone=True, outputs=fpn, fn="retinanet_resnet50_fpn")
    tv("ssdlite320_mobilenet_v3_large.backbone", "SSDLite", "SSDLite's MobileNetV3-Large feature extractor "
       "(6 maps), 320x320", size=320, sub="detection", backbone=True,
       outputs=tuple(f"f{i}" for i in range(6)), fn="ssdlite320_mobilenet_v3_large")

    # timm: one model per architecture family, the smallest variant
    for name, family, size in [
        ("resnet18", "ResNet", 224), ("resnext26ts", "ResNeXt", 224), ("resnetv2_50", "ResNetV2 (pre-activation)", 224),
        ("regnetx_002", "RegNetX", 224), ("regnety_002", "RegNetY", 224), ("regnetz_b16", "RegNetZ", 224),
        ("efficientnet_b0", "EfficientNet", 224), ("efficientnet_lite0", "EfficientNet-Lite", 224),
        ("tf_efficientnetv2_b0", "EfficientNetV2 (TF padding)", 192),
        ("mobilenetv1_100", "MobileNetV1", 224), ("mobilenetv2_050", "MobileNetV2", 224),
        ("mobilenetv3_small_050", "MobileNetV3", 224), ("mobilenetv4_conv_small", "MobileNetV4", 224),
        ("mnasnet_small", "MNASNet", 224), ("ghostnet_050", "GhostNet", 224), ("ghostnetv2_100", "GhostNetV2", 224),
        ("densenet121", "DenseNet", 224), ("inception_v3", "Inception", 224), ("xception41", "Xception", 224),
        ("convnext_atto", "ConvNeXt", 224), ("convnextv2_atto", "ConvNeXtV2", 224),
        ("vit_tiny_patch16_224", "ViT", 224), ("deit_tiny_patch16_224", "DeiT", 224),
        ("deit_tiny_distilled_patch16_224", "DeiT (distilled)", 224),
        ("swin_tiny_patch4_window7_224", "Swin", 224), ("swinv2_cr_tiny_ns_224", "SwinV2", 224),
        ("maxvit_pico_rw_256", "MaxViT", 256), ("coatnet_pico_rw_224", "CoAtNet", 224),
        ("mobilevit_xxs", "MobileViT", 256), ("mobilevitv2_050", "MobileViTV2", 256),
        ("efficientformer_l1", "EfficientFormer", 224), ("efficientformerv2_s0", "EfficientFormerV2", 224),
        ("levit_128s", "LeViT", 224), ("poolformer_s12", "PoolFormer", 224), ("caformer_s18", "MetaFormer (CAFormer)", 224),
        ("repvgg_a0", "RepVGG", 224), ("hrnet_w18_small", "HRNet", 224), ("dla34", "DLA", 224),
        ("cspresnet50", "CSPNet", 224), ("darknet17", "DarkNet", 224), ("dpn48b", "DPN", 224),
        ("res2net50_14w_8s", "Res2Net", 224), ("resnest14d", "ResNeSt", 224), ("seresnext26d_32x4d", "SENet", 224),
        ("skresnet18", "SKNet", 224), ("selecsls42b", "SelecSLS", 224), ("hardcorenas_a", "HardCoReNAS", 224),
        ("fbnetc_100", "FBNet", 224), ("tinynet_e", "TinyNet", 106), ("lcnet_050", "LCNet", 224),
        ("rexnet_100", "ReXNet", 224), ("mixnet_s", "MixNet", 224), ("edgenext_xx_small", "EdgeNeXt", 256),
        ("fastvit_t8", "FastViT", 256), ("repvit_m1", "RepViT", 224), ("mobileone_s0", "MobileOne", 224),
        ("ese_vovnet19b_slim_dw", "VoVNet", 224), ("crossvit_tiny_240", "CrossViT", 240), ("pit_ti_224", "PiT", 224),
        ("tnt_s_patch16_224", "TNT", 224), ("mixer_s16_224", "MLP-Mixer", 224), ("resmlp_12_224", "ResMLP", 224),
        ("gmlp_ti16_224", "gMLP", 224), ("cait_xxs24_224", "CaiT", 224), ("xcit_nano_12_p16_224", "XCiT", 224),
        ("twins_svt_small", "Twins", 224), ("pvt_v2_b0", "PVTv2", 224), ("mvitv2_tiny", "MViTv2", 224),
        ("nf_regnet_b0", "NFNet", 192), ("nest_tiny", "NesT", 224), ("visformer_tiny", "Visformer", 224),
        ("sequencer2d_s", "Sequencer (LSTM)", 224), ("efficientvit_b0", "EfficientViT (MIT)", 224),
        ("efficientvit_m0", "EfficientViT (MSRA)", 224), ("tiny_vit_5m_224", "TinyViT", 224),
        ("hgnetv2_b0", "HGNetV2", 224), ("starnet_s050", "StarNet", 224), ("mambaout_femto", "MambaOut", 224),
        ("gernet_s", "GENet", 224), ("botnet26t_256", "BoTNet", 256), ("halonet26t", "HaloNet", 256),
        ("lambda_resnet26t", "LambdaNet", 256), ("volo_d1_224", "VOLO", 224), ("eva02_tiny_patch14_224", "EVA-02", 224),
        ("nextvit_small", "Next-ViT", 224), ("focalnet_tiny_srf", "FocalNet", 224), ("davit_tiny", "DaViT", 224),
        ("hiera_tiny_224", "Hiera", 224), ("gcvit_xxtiny", "GCViT", 224), ("coat_lite_tiny", "CoaT", 224),
        ("convit_tiny", "ConViT", 224), ("fasternet_t0", "FasterNet", 224), ("inception_next_atto", "InceptionNeXt", 224),
        ("shvit_s1", "SHViT", 224), ("swiftformer_xs", "SwiftFormer", 224),
    ]:
        tm(name, family, size)

    # transformers: small configs, built offline
    hf("bert", "BERT", "BertModel, 2 layers, hidden 128, 4 heads, sequence 32",
       _hf("BertModel", "BertConfig", **_BERT), _tokens(), _HIDDEN)
    hf("roberta", "RoBERTa", "RobertaModel, 2 layers, hidden 128, 4 heads, sequence 32",
       _hf("RobertaModel", "RobertaConfig", **dict(_BERT, max_position_embeddings=66)), _tokens(), _HIDDEN)
    hf("distilbert", "DistilBERT", "DistilBertModel, 2 layers, dim 128, 4 heads, sequence 32",
       _hf("DistilBertModel", "DistilBertConfig", vocab_size=1000, max_position_embeddings=64, dim=128, n_layers=2,
           n_heads=4, hidden_dim=256), _tokens(), _HIDDEN)
    hf("albert", "ALBERT", "AlbertModel, 2 layers (shared), embedding 64, hidden 128, sequence 32",
       _hf("AlbertModel", "AlbertConfig", **dict(_BERT, embedding_size=64)), _tokens(), _HIDDEN)
    hf("gpt2", "GPT-2", "GPT2LMHeadModel, 2 layers, hidden 128, 4 heads, sequence 32",
       _hf("GPT2LMHeadModel", "GPT2Config", vocab_size=1000, n_positions=64, n_embd=128, n_layer=2, n_head=4,
           use_cache=False), _tokens(), _LOGITS)
    hf("llama", "Llama", "LlamaForCausalLM, 2 layers, hidden 128, 4 heads, 2 KV heads, sequence 32",
       _hf("LlamaForCausalLM", "LlamaConfig", **_DECODER), _tokens(), _LOGITS)
    hf("mistral", "Mistral", "MistralForCausalLM, 2 layers, hidden 128, 4 heads, 2 KV heads, sequence 32",
       _hf("MistralForCausalLM", "MistralConfig", **_DECODER), _tokens(), _LOGITS)
    hf("qwen2", "Qwen2", "Qwen2ForCausalLM, 2 layers, hidden 128, 4 heads, 2 KV heads, sequence 32",
       _hf("Qwen2ForCausalLM", "Qwen2Config", **_DECODER), _tokens(), _LOGITS)
    hf("t5_encoder", "T5", "T5EncoderModel, 2 layers, d_model 128, 4 heads, sequence 32",
       _hf("T5EncoderModel", "T5Config", vocab_size=1000, d_model=128, d_kv=32, d_ff=256, num_layers=2, num_heads=4),
       _tokens(), _HIDDEN)
    hf("whisper_encoder", "Whisper", "Whisper's encoder, 2 layers, d_model 128, 80 mel bins x 100 frames",
       _hf_part("WhisperModel", "WhisperConfig", "get_encoder", vocab_size=1000, d_model=128, encoder_layers=2,
                decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=256,
                decoder_ffn_dim=256, num_mel_bins=80, max_source_positions=50, max_target_positions=32,
                pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1),
       (("input_features", (1, 80, 100), "normal"),), _HIDDEN)
    hf("vit", "ViT", "ViTForImageClassification, 64x64, patch 8, 2 layers, hidden 128",
       _hf("ViTForImageClassification", "ViTConfig", **_VIT), _pixels(), _LOGITS)
    hf("deit", "DeiT", "DeiTForImageClassification, 64x64, patch 8, 2 layers, hidden 128",
       _hf("DeiTForImageClassification", "DeiTConfig", **_VIT), _pixels(), _LOGITS)
    hf("swin", "Swin", "SwinForImageClassification, 64x64, patch 4, window 4, depths 2-2, embed 32",
       _hf("SwinForImageClassification", "SwinConfig", image_size=64, patch_size=4, embed_dim=32, depths=[2, 2],
           num_heads=[2, 4], window_size=4, num_labels=10), _pixels(), _LOGITS)
    hf("convnext", "ConvNeXt", "ConvNextForImageClassification, 64x64, 4 stages of 1 block, 16-128 channels",
       _hf("ConvNextForImageClassification", "ConvNextConfig", hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
           num_labels=10, image_size=64), _pixels(), _LOGITS)
    hf("segformer", "SegFormer", "SegformerForSemanticSegmentation, 64x64, 4 stages of 1 block, 16-128 channels",
       _hf("SegformerForSemanticSegmentation", "SegformerConfig", depths=[1, 1, 1, 1], hidden_sizes=[16, 32, 64, 128],
           num_attention_heads=[1, 2, 4, 8], decoder_hidden_size=64, num_labels=10), _pixels(), _LOGITS)
    hf("wav2vec2", "Wav2Vec2", "Wav2Vec2Model, 3 conv layers, 2 transformer layers, hidden 64, 4000 samples",
       _hf("Wav2Vec2Model", "Wav2Vec2Config", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
           intermediate_size=128, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
           num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, do_stable_layer_norm=False),
       (("input_values", (1, 4000), "normal"),), _HIDDEN)
    return {m.name: m for m in models}


_MODELS = _registry()


# ---------------------------------------------------------------------------------------
# The public API


def names(select: str | None = None) -> list[str]:
    """The names of the corpus's models in a stable order. ``select`` is a comma list
    whose items are each a model name, a source (``torchvision``, ``timm``,
    ``transformers``) or a family (``ResNet``, case-insensitive); ``None`` or ``all``
    selects every model."""
    if select is None or select.strip() in ("", "all"):
        return list(_MODELS)
    picked = []
    for item in (s.strip() for s in select.split(",")):
        if not item:
            continue
        low = item.lower()
        hits = [n for n, m in _MODELS.items()
                if low in (n.lower(), m.source, m.family.lower()) or n.split("/")[-1].lower() == low]
        if not hits:
            raise ZooError(f"tilecore.zoo.outside: {item!r} names no model, source or family of the corpus "
                           f"(sources: {', '.join(SOURCES)})")
        picked += [n for n in hits if n not in picked]
    return picked


def _model(name):
    if name not in _MODELS:
        raise ZooError(f"tilecore.zoo.outside: no model named {name!r}; names() lists the corpus")
    return _MODELS[name]


def info(name: str) -> dict[str, Any]:
    """A dict describing model ``name``: ``source``, ``family``, ``description``,
    ``inputs`` (name -> ``{"shape", "dtype", "kind"}``) and ``outputs`` (names)."""
    m = _model(name)
    return {
        "name": name, "source": m.source, "family": m.family, "description": m.description,
        "inputs": {n: {"shape": list(shape), "dtype": "int64" if kind.startswith("tokens") else "float32",
                       "kind": kind} for n, shape, kind in m.inputs},
        "outputs": list(m.outputs),
    }


def sample_inputs(name: str, n: int, seed: int) -> dict[str, np.ndarray]:
    """``n`` seeded input samples of model ``name``: input name -> array ``(n, *shape)``
    (sample ``i`` is ``array[i]``; it depends on (name, seed, i) only, not on ``n``)."""
    m = _model(name)
    out = {}
    for k, (input_name, shape, kind) in enumerate(m.inputs):
        rng = np.random.default_rng([seed, 2, zlib.crc32(name.encode()), k])
        if kind.startswith("tokens:"):
            out[input_name] = rng.integers(0, int(kind.split(":")[1]), (n, *shape), dtype=np.int64)
        else:
            out[input_name] = _draw(rng, "imagenet" if kind == "image" else "normal", (n, *shape))
    return out


def versions() -> dict[str, dict[str, str | None]]:
    """package -> ``{"installed": version or None, "pinned": version}`` for every
    package the corpus needs."""
    out = {}
    for package, pinned in PINNED.items():
        try:
            installed = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        out[package] = {"installed": installed, "pinned": pinned}
    return out


def cache_path(name: str, seed: int = 0) -> str:
    """The cache file of (name, seed) for the installed package versions."""
    m = _model(name)
    installed = {k: v["installed"] for k, v in versions().items()}
    key = f"{OUTSIDE_FORMAT}|{installed['torch']}|{installed['onnxscript']}|{installed.get(m.source)}"
    safe = name.replace("/", "-").replace(".", "_")
    return os.path.join(cache_dir(), "outside", f"{safe}-s{seed}-{zlib.crc32(key.encode()):08x}.onnx")


def build(name: str, path: str | os.PathLike[str] | None = None, seed: int = 0,
          cache: bool = True) -> tuple[str, dict[str, np.ndarray]]:
    """Builds model ``name`` with weights from ``seed``, exports it (or takes the cached
    export) and returns ``(path of the .onnx file, inputs)``, the inputs being sample 0 of
    :func:`sample_inputs` with seed :data:`EVAL_SEED` (input name -> array at batch 1).
    ``path``: also copy the file there. ``cache=False`` re-exports."""
    m = _model(name)
    cached = cache_path(name, seed)
    if cache and os.path.exists(cached):
        with open(cached, "rb") as f:
            data = f.read()
    else:
        data = _export(m, seed)
        _write_atomic(cached, data)
    if path is not None:
        _write_atomic(os.fspath(path), data)
    feeds = {k: v[0] for k, v in sample_inputs(name, 1, EVAL_SEED).items()}
    return os.fspath(path) if path is not None else cached, feeds


# ---------------------------------------------------------------------------------------
# Weights and export


def _redraw_constants(torch, model, rng):
    """Redraws what a library's init leaves constant (see the module doc)."""
    bn = torch.nn.modules.batchnorm._BatchNorm
    done = set()

    def put(param, array):
        with torch.no_grad():
            param.copy_(torch.from_numpy(np.asarray(array, dtype=np.float32)).reshape(param.shape))

    for _, mod in model.named_modules():
        if isinstance(mod, bn) and mod.affine:
            put(mod.weight, rng.uniform(0.5, 1.5, mod.num_features))
            put(mod.bias, rng.normal(0.0, 0.1, mod.num_features))
            done.update((id(mod.weight), id(mod.bias)))
    for _, p in model.named_parameters():
        if id(p) in done or not p.is_floating_point() or p.numel() == 0:
            continue
        lo, hi = float(p.detach().min()), float(p.detach().max())
        if lo != hi:
            continue
        shape = tuple(p.shape)
        if lo == 0.0:
            put(p, rng.normal(0.0, 0.02, shape))
        elif abs(lo) < 0.1:  # a layer scale (1e-6, 1e-5): the branch must count
            put(p, np.sign(lo) * rng.uniform(0.05, 0.2, shape))
        else:
            put(p, lo * rng.uniform(0.8, 1.2, shape))


class _Outputs:
    """Wraps the library's module so that it takes the inputs positionally and returns
    tensors: ``pick`` is None (a tensor, a tuple, or a dict whose values are the outputs, in
    order), or a key of the dict or ModelOutput it returns."""

    _cls = None

    @classmethod
    def wrap(cls, torch, module, input_names, pick, keyword):
        if cls._cls is None:
            class Outputs(torch.nn.Module):
                def __init__(self, inner, input_names, pick, keyword):
                    super().__init__()
                    self.inner, self.input_names, self.pick, self.keyword = inner, input_names, pick, keyword

                def forward(self, *args):
                    out = self.inner(**dict(zip(self.input_names, args))) if self.keyword else self.inner(*args)
                    if self.pick is not None:
                        out = out[self.pick]
                    if isinstance(out, torch.Tensor):
                        return out
                    if isinstance(out, dict):
                        return tuple(out.values())
                    return tuple(out)
            cls._cls = Outputs
        return cls._cls(module, list(input_names), pick, keyword)


def _seeded_model(m, seed):
    torch = import_torch()
    key = zlib.crc32(m.name.encode())
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inner = m.make()
    _redraw_constants(torch, inner, np.random.default_rng([seed, 3, key]))
    model = _Outputs.wrap(torch, inner, [i[0] for i in m.inputs], m.pick, m.source == "transformers")
    has_bn = any(isinstance(x, torch.nn.modules.batchnorm._BatchNorm) for x in model.modules())
    if has_bn:
        (input_name, shape, kind), = m.inputs
        rng = np.random.default_rng([seed, 1, key])
        batch = _draw(rng, "imagenet" if kind == "image" else "normal", (BN_SAMPLES, *shape[1:]))
        torch.manual_seed(seed)
        measure_batchnorm(model, batch)
    return model.float().eval()


@contextlib.contextmanager
def _quiet():
    """Output written to file descriptors 1 and 2 (the exporters' C++ logs, the graph
    dump of a refused export, progress lines) is dropped."""
    import sys
    import tempfile

    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _to_opset17(onnx, proto):
    """``proto`` (opset 18) converted to opset 17 by ONNX's version converter, checked.

    The converter moves a Reduce op's ``axes`` input back to an attribute but leaves
    ``noop_with_empty_axes``, which only ReduceSum has before opset 18; with its default
    value 0 (the only one the exporter writes) dropping it changes nothing."""
    converted = onnx.version_converter.convert_version(proto, 17)
    for node in converted.graph.node:
        if node.op_type.startswith("Reduce") and node.op_type != "ReduceSum":
            keep = [a for a in node.attribute if not (a.name == "noop_with_empty_axes" and a.i == 0)]
            del node.attribute[:]
            node.attribute.extend(keep)
    onnx.checker.check_model(converted, full_check=True)
    return converted


def _export(m, seed):
    """The ONNX bytes of ``m`` with two metadata entries: ``tilecore.exporter`` (which
    exporter made it) and ``tilecore.torch_vs_onnxruntime`` (the lowest output cosine of
    ONNX Runtime against PyTorch on the evaluation inputs: how well-conditioned the
    reference is; absent without onnxruntime)."""
    torch = import_torch()
    onnx = import_onnx()
    model = _seeded_model(m, seed)
    example = [v[0] for v in sample_inputs(m.name, 1, EVAL_SEED).values()]
    proto = onnx.load_from_string(_export_bytes(torch, onnx, m, model, example))
    if not any(p.key == "tilecore.exporter" for p in proto.metadata_props):
        entry = proto.metadata_props.add()
        entry.key, entry.value = "tilecore.exporter", "classic"
    cosine = _torch_vs_onnxruntime(torch, model, example, proto)
    if cosine is not None:
        entry = proto.metadata_props.add()
        entry.key, entry.value = "tilecore.torch_vs_onnxruntime", f"{cosine:.7f}"
    return proto.SerializeToString()


def _torch_vs_onnxruntime(torch, model, example, proto):
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    with torch.no_grad():
        out = model(*(torch.from_numpy(np.ascontiguousarray(a)) for a in example))
    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
    got = sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), example)})
    cosine = 1.0
    for t, r in zip(outs, got):
        a, b = t.numpy().astype(np.float64).ravel(), np.asarray(r, np.float64).ravel()
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        cosine = min(cosine, 1.0 if na == nb == 0 else float(a @ b / (na * nb)) if na and nb else 0.0)
    return cosine


def _export_bytes(torch, onnx, m, model, example):
    """The classic exporter's bytes, else the torch.export-based exporter's."""
    in_names = [i[0] for i in m.inputs]
    try:
        with _quiet():
            return export_onnx(model, example, in_names, list(m.outputs))
    except Exception as classic:  # noqa: BLE001 - any refusal of the classic exporter
        first = str(classic).strip().splitlines()[0] if str(classic).strip() else type(classic).__name__
    try:
        import onnxscript  # noqa: F401
    except ImportError:
        raise ZooError(f"tilecore.zoo.outside: {m.name}: the classic exporter refused it ({first}) and the "
                       f"torch.export-based one needs onnxscript (pip install onnxscript=={PINNED['onnxscript']})"
                       ) from None
    args = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in example)
    # The torch.export-based exporter starts at opset 18; its optimised graph is converted
    # down to 17 by ONNX's version converter (it stays at 18 when that fails).
    with _quiet(), torch.no_grad():
        program = torch.onnx.export(model, args, dynamo=True, opset_version=18, input_names=in_names,
                                    output_names=list(m.outputs), optimize=True, verify=False)
    proto = program.model_proto
    note = f"dynamo (the classic exporter refused: {first[:200]})"
    try:
        proto = _to_opset17(onnx, proto)
    except Exception as e:  # noqa: BLE001 - the converter's refusals are plain RuntimeErrors
        note += f"; kept at opset 18 ({str(e).strip().splitlines()[0][:200]})"
    entry = proto.metadata_props.add()
    entry.key, entry.value = "tilecore.exporter", note
    return proto.SerializeToString()
