"""tilecore/zoo/transformer.py — a BERT-like encoder layer (post-LayerNorm, as in BERT):

    x   = hidden_states                                  [B, S, H]
    q, k, v = Linear(x) each, viewed [B, S, heads, H/heads] and transposed to [B, heads, S, d]
    ctx = Softmax(q @ k^T / sqrt(d)) @ v, transposed back and reshaped to [B, S, H]
    x   = LayerNorm(x + Linear(ctx))
    out = LayerNorm(x + Linear(GELU(Linear(x))))        FFN H -> 4H -> H, GELU in its erf form

The chosen size is BERT-mini's: hidden 256, 4 heads of 64, FFN 1024, sequence 128.
Module names follow Hugging Face's ``BertLayer`` (``attention.self.query``,
``attention.output.LayerNorm``, ``intermediate.dense``, ``output.dense``, ...).

What the opset-17 export contains: MatMul + Add for each Linear, Reshape and Transpose
around the heads (with the Shape/Gather/Unsqueeze/Concat arithmetic the exporter emits for
``x.size()``), MatMul, Div, Softmax, LayerNormalization, and GELU decomposed as
``0.5 * x * (1 + erf(x / sqrt(2)))`` (Div, Erf, Add, Mul, Mul), since ONNX's Gelu op is
opset 20. There is no attention mask input (every token attends to every token), so
the graph is float-only.
"""

from __future__ import annotations

import math

from ._build import import_torch

torch = import_torch()
nn = torch.nn

HIDDEN, HEADS, FFN, SEQ = 256, 4, 1024, 128


class _Proj(nn.Module):
    """A Linear under ``dense`` with the LayerNorm after it, as BertSelfOutput/BertOutput."""

    def __init__(self, d_in: int, d_out: int, eps: float) -> None:
        super().__init__()
        self.dense = nn.Linear(d_in, d_out)
        self.LayerNorm = nn.LayerNorm(d_out, eps=eps)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(x) + residual)


class SelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def _split(self, x):
        b, s, _ = x.size()
        return x.view(b, s, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        b, _, s, _ = ctx.size()
        return ctx.transpose(1, 2).reshape(b, s, self.heads * self.head_dim)


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int, eps: float) -> None:
        super().__init__()
        setattr(self, "self", SelfAttention(hidden, heads))
        self.output = _Proj(hidden, hidden, eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(getattr(self, "self")(x), x)


class Intermediate(nn.Module):
    def __init__(self, hidden: int, ffn: int) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden, ffn)
        self.intermediate_act_fn = nn.GELU()  # the exact (erf) form

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.intermediate_act_fn(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, hidden: int = HIDDEN, heads: int = HEADS, ffn: int = FFN, eps: float = 1e-12) -> None:
        super().__init__()
        self.attention = Attention(hidden, heads, eps)
        self.intermediate = Intermediate(hidden, ffn)
        self.output = _Proj(ffn, hidden, eps)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        x = self.attention(hidden_states)
        return self.output(self.intermediate(x), x)


def bert_layer() -> nn.Module:
    return BertLayer()
