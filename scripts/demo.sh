#!/usr/bin/env bash
# scripts/demo.sh — the README's first command: build tilecore, then run its demo (ResNet-18
# compiled for TC1, run on the simulator and compared with ONNX Runtime).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/bootstrap.sh && python3 -m tilecore demo
