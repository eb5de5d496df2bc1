#!/usr/bin/env bash
# scripts/bootstrap.sh — installs what building and testing tilecore needs, then
# builds it into build/ as an editable Python install. Sourced by test.sh and demo.sh.
#
# Python packages come from pip; Debian packages from apt-get when running as root,
# otherwise the missing package is named and the script stops.
set -euo pipefail

PYTHON=${PYTHON:-python3}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

source "$ROOT/scripts/common.sh"

need_deb g++ g++
need_deb /usr/include/gtest/gtest.h libgtest-dev
need_deb /usr/include/zlib.h zlib1g-dev  # the modules of a .tcx with buckets are deflated
need_deb dot graphviz  # tilecore viz renders model graphs with Graphviz

pip_quiet() { "$PYTHON" -m pip install -q --disable-pip-version-check "$@"; }
"$PYTHON" -c "import scikit_build_core, cmake, ninja" 2>/dev/null || pip_quiet "scikit-build-core>=0.10" cmake ninja
"$PYTHON" -c "import numpy, pytest" 2>/dev/null || pip_quiet numpy pytest
# pytest-xdist: the test command runs the Python tests on every core (scripts/common.sh).
"$PYTHON" -c "import xdist" 2>/dev/null || pip_quiet pytest-xdist \
  || echo "tilecore: pytest-xdist unavailable; the Python tests run on one core"
"$PYTHON" -c "import onnx" 2>/dev/null || pip_quiet onnx || echo "tilecore: onnx unavailable; its tests will be skipped"
# ml_dtypes (onnx depends on it too): numpy's bfloat16 and float8 types, which NDArray and
# Executable.run take and give.
"$PYTHON" -c "import ml_dtypes" 2>/dev/null || pip_quiet ml_dtypes \
  || echo "tilecore: ml_dtypes unavailable; bfloat16 and float8 arrays cannot reach numpy"
# Hypothesis for the property tests; SciPy (erf) and Pillow (ImageDecoder) for the op library.
"$PYTHON" -c "import hypothesis, scipy, PIL" 2>/dev/null || pip_quiet hypothesis scipy Pillow \
  || echo "tilecore: hypothesis/scipy/Pillow unavailable; the property tests and ImageDecoder are skipped"
"$PYTHON" -c "import tqdm" 2>/dev/null || pip_quiet tqdm || echo "tilecore: tqdm unavailable; the CLI prints progress as plain lines"
# Ray for `tilecore bench --backend ray` and its tests (docs/bench.md).
"$PYTHON" -c "import ray" 2>/dev/null || pip_quiet ray || echo "tilecore: ray unavailable; tilecore bench --backend ray and its tests are skipped"
# PyTorch only for the DLPack interchange tests. Take it from a local wheel when the
# machine has one (--no-index fails fast otherwise): the registry build pulls in
# gigabytes of CUDA packages.
if ! "$PYTHON" -c "import torch" 2>/dev/null; then
  if pip_quiet --no-index --no-deps "torch==2.13.0" 2>/dev/null; then
    pip_quiet "torch==2.13.0" || true
  else
    echo "tilecore: no local PyTorch wheel; the PyTorch DLPack tests will be skipped"
  fi
fi
# The model zoo (tilecore.zoo) checks its exports with ONNX Runtime, and checks its ResNet
# and MobileNetV2 definitions against torchvision's. Only torchvision's pure-Python model
# files are used (its compiled part does not load against the CPU torch wheel), hence
# --no-deps and a probe that does not import it.
"$PYTHON" -c "import onnxruntime" 2>/dev/null || pip_quiet onnxruntime \
  || echo "tilecore: onnxruntime unavailable; the model zoo tests will be skipped"
if "$PYTHON" -c "import torch" 2>/dev/null \
   && ! "$PYTHON" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torchvision') is None)"; then
  pip_quiet --no-deps "torchvision==0.28.0" \
    || echo "tilecore: torchvision unavailable; the zoo's check against its model definitions will be skipped"
fi
# The outside model corpus (tilecore.zoo.outside: models of timm and transformers, exported
# offline) and its torch.export-based exporter (onnxscript). timm requires torch and
# torchvision: --no-deps and its other requirements named, so that pip never replaces the
# installed torch.
if "$PYTHON" -c "import torch" 2>/dev/null; then
  "$PYTHON" -c "import importlib.util as u, sys; sys.exit(u.find_spec('timm') is None)" \
    || { pip_quiet pyyaml huggingface_hub safetensors && pip_quiet --no-deps "timm==1.0.31"; } \
    || echo "tilecore: timm unavailable; the outside corpus's timm test will be skipped"
  "$PYTHON" -c "import importlib.util as u, sys; sys.exit(u.find_spec('transformers') is None)" \
    || pip_quiet "transformers==5.24.0" \
    || echo "tilecore: transformers unavailable; the outside corpus's transformers tests will be skipped"
  "$PYTHON" -c "import onnxscript" 2>/dev/null || pip_quiet "onnxscript==0.7.2" \
    || echo "tilecore: onnxscript unavailable; the outside corpus's Llama test will be skipped"
fi

# ccache: the build without the npu (scripts/test_without_npu.sh) compiles all but a dozen
# files exactly as this build does, so with both going through one cache (ccache_env in
# scripts/common.sh) it takes those files from here instead of compiling them again.
# Optional: installed when running as root, otherwise used only if present.
[ "$(id -u)" = 0 ] && { need_deb ccache ccache "the compiler cache" || true; }
LAUNCHER=()
if ccache_env; then
  LAUNCHER=(-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache -Ccmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
fi

# One build directory serves the Python package and the C++ tests.
BUILD_DIR=${TILECORE_BUILD_DIR:-$ROOT/build}
"$PYTHON" -m pip install -q --disable-pip-version-check --no-build-isolation -e "$ROOT" \
  -Cbuild-dir="$BUILD_DIR" \
  -Ccmake.define.TILECORE_LAYERS=all \
  -Ccmake.define.TILECORE_BUILD_TESTS=ON \
  -Ccmake.define.TILECORE_WERROR=ON \
  "${LAUNCHER[@]}" \
  -Cbuild.tool-args=-j2
