"""A BERT encoder's forward pass in numpy, with mean pooling: what sentence-transformers runs
for all-MiniLM-L6-v2, without torch.

The computation is the one of Hugging Face's ``BertModel`` in inference mode (no dropout):
word + position + token-type embeddings and a LayerNorm; then per layer, multi-head
self-attention with padded positions masked out, a residual LayerNorm, a GELU feed-forward
block and another residual LayerNorm; then the mean of the last hidden states over the real
(unpadded) tokens. Everything runs in float32, like torch on CPU; the matrix products go to
numpy's BLAS. Only ``hidden_act = "gelu"`` (the exact, erf-based GELU) is implemented.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float32]

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_CACHE_FLOATS = 1 << 17
"""float32 values (512 KiB) in one block of attention scores: about a core's L2 cache."""
_GELU_BLOCK = 1 << 15
"""float32 values per block of GELU: with its four temporaries, ~640 KiB."""


class ModelFormatError(ValueError):
    """The configuration or the weights are not those of a BERT encoder we can run."""


@dataclass(frozen=True)
class BertConfig:
    hidden_size: int
    num_attention_heads: int
    num_hidden_layers: int
    intermediate_size: int
    max_position_embeddings: int
    layer_norm_eps: float

    @classmethod
    def from_json(cls, config: Mapping[str, Any]) -> BertConfig:
        """Read the fields of a Hugging Face ``config.json`` that the forward pass uses."""
        if config.get("model_type") != "bert":
            raise ModelFormatError(f"model_type is {config.get('model_type')!r}, not 'bert'")
        if config.get("hidden_act") != "gelu":
            raise ModelFormatError(
                f"hidden_act is {config.get('hidden_act')!r}; only 'gelu' is implemented"
            )
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ModelFormatError("only absolute position embeddings are implemented")
        try:
            made = cls(
                hidden_size=int(config["hidden_size"]),
                num_attention_heads=int(config["num_attention_heads"]),
                num_hidden_layers=int(config["num_hidden_layers"]),
                intermediate_size=int(config["intermediate_size"]),
                max_position_embeddings=int(config["max_position_embeddings"]),
                layer_norm_eps=float(config["layer_norm_eps"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"config.json lacks or mangles {exc}") from exc
        if made.hidden_size % made.num_attention_heads:
            raise ModelFormatError("hidden_size is not a multiple of num_attention_heads")
        return made


@dataclass(frozen=True)
class _Linear:
    weight: Floats  # (out, in), as stored: ``x @ weight.T`` lets BLAS read it transposed
    bias: Floats

    def __call__(self, x: Floats) -> Floats:
        out: Floats = x @ self.weight.T
        out += self.bias
        return out


@dataclass(frozen=True)
class _LayerNorm:
    weight: Floats
    bias: Floats
    eps: float

    def __call__(self, x: Floats) -> Floats:
        centred: Floats = x - x.mean(axis=-1, keepdims=True)
        variance = np.mean(np.square(centred), axis=-1, keepdims=True)
        centred /= np.sqrt(variance + np.float32(self.eps))
        centred *= self.weight
        centred += self.bias
        return centred


@dataclass(frozen=True)
class _Layer:
    query: _Linear
    key: _Linear
    value: _Linear
    attention_output: _Linear
    attention_norm: _LayerNorm
    intermediate: _Linear
    output: _Linear
    output_norm: _LayerNorm


# erf(z) ~ z * P(z^2) / Q(z^2) on [-4, 4] (beyond, erf is +-1 in float32): the rational
# approximation Eigen and XLA use for float32, accurate to a few ulp. Highest degree first.
_ERF_P = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_Q = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)


def _polynomial(coefficients: tuple[float, ...], x: Floats) -> Floats:
    result = x * np.float32(coefficients[0])
    result += np.float32(coefficients[1])
    for c in coefficients[2:]:
        result *= x
        result += np.float32(c)
    return result


def gelu(x: Floats) -> Floats:
    """The exact (erf) GELU, ``x * (1 + erf(x / sqrt 2)) / 2``, in place, a block at a time.

    numpy has no ``erf``; the rational approximation above has no exp and no branch, and
    running it over blocks that fit the CPU cache made it about 3x faster than over the whole
    (tokens x 1536) activation matrix at once.
    """
    flat = x.reshape(-1)
    for start in range(0, flat.size, _GELU_BLOCK):
        block = flat[start : start + _GELU_BLOCK]
        z = block * np.float32(_INV_SQRT2)
        np.clip(z, -4.0, 4.0, out=z)
        z2 = np.square(z)
        erf = _polynomial(_ERF_P, z2)
        erf *= z
        erf /= _polynomial(_ERF_Q, z2)
        erf += 1.0
        erf *= 0.5
        block *= erf
    return x


class BertEncoder:
    """The encoder with its weights; :meth:`embed` is thread-safe (it only reads them)."""

    def __init__(self, config: BertConfig, tensors: Mapping[str, Floats]) -> None:
        self.config = config

        def get(name: str, shape: tuple[int | None, ...]) -> Floats:
            """The tensor ``name``, checked against ``shape`` (None: any size)."""
            tensor = tensors.get(name)
            if tensor is None:
                raise ModelFormatError(f"the weights have no tensor {name!r}")
            if len(tensor.shape) != len(shape) or any(
                want is not None and want != got
                for want, got in zip(shape, tensor.shape, strict=True)
            ):
                raise ModelFormatError(f"tensor {name!r} has shape {tensor.shape}, not {shape}")
            return tensor

        hidden, inner = config.hidden_size, config.intermediate_size

        def linear(prefix: str, out: int, into: int) -> _Linear:
            return _Linear(get(prefix + ".weight", (out, into)), get(prefix + ".bias", (out,)))

        def norm(prefix: str) -> _LayerNorm:
            return _LayerNorm(
                get(prefix + ".weight", (hidden,)), get(prefix + ".bias", (hidden,)), eps
            )

        eps = config.layer_norm_eps
        self.word_embeddings = get("embeddings.word_embeddings.weight", (None, hidden))
        self.position_embeddings = get(
            "embeddings.position_embeddings.weight", (config.max_position_embeddings, hidden)
        )
        token_types = get("embeddings.token_type_embeddings.weight", (None, hidden))
        self.token_type_embedding = token_types[0]  # every token is of type 0 (one segment)
        self.embedding_norm = norm("embeddings.LayerNorm")
        self.layers = []
        for i in range(config.num_hidden_layers):
            p = f"encoder.layer.{i}."
            self.layers.append(
                _Layer(
                    query=linear(p + "attention.self.query", hidden, hidden),
                    key=linear(p + "attention.self.key", hidden, hidden),
                    value=linear(p + "attention.self.value", hidden, hidden),
                    attention_output=linear(p + "attention.output.dense", hidden, hidden),
                    attention_norm=norm(p + "attention.output.LayerNorm"),
                    intermediate=linear(p + "intermediate.dense", inner, hidden),
                    output=linear(p + "output.dense", hidden, inner),
                    output_norm=norm(p + "output.LayerNorm"),
                )
            )

    def embed(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]) -> Floats:
        """Mean-pooled last hidden states of a padded batch: ``ids`` and ``mask`` are
        (batch, length); returns (batch, hidden), not normalised."""
        batch, length = ids.shape
        if length > self.config.max_position_embeddings:
            raise ValueError(f"{length} tokens exceed {self.config.max_position_embeddings}")
        x = self.word_embeddings[ids]  # a gather: a fresh float32 array
        x += self.position_embeddings[:length]
        x += self.token_type_embedding
        hidden = self.embedding_norm(x.reshape(batch * length, -1))
        # Added to the attention scores: padded keys get float32's most negative value, so
        # their softmax weight is exactly zero (what transformers does).
        key_bias = np.where(mask, np.float32(0.0), np.finfo(np.float32).min)
        key_bias = key_bias.astype(np.float32)[:, None, None, :]
        for layer in self.layers:
            hidden = self._layer(layer, hidden, key_bias, batch, length)
        states = hidden.reshape(batch, length, -1)
        weights = mask.astype(np.float32)[:, None, :]  # (batch, 1, length)
        summed = (weights @ states)[:, 0, :]
        counts = np.maximum(weights.sum(axis=2), np.float32(1e-9))
        pooled: Floats = summed / counts
        return pooled

    def _layer(self, layer: _Layer, x: Floats, key_bias: Floats, batch: int, length: int) -> Floats:
        attended = layer.attention_output(self._attention(layer, x, key_bias, batch, length))
        attended += x
        x = layer.attention_norm(attended)
        out = _feed_forward(layer, x)
        out += x
        return layer.output_norm(out)

    def _attention(
        self, layer: _Layer, x: Floats, key_bias: Floats, batch: int, length: int
    ) -> Floats:
        """Multi-head self-attention of (batch x length, hidden) rows, before the output
        projection. The scores are computed a few sequences at a time, so that the softmax's
        passes over them stay in the CPU cache."""
        heads = self.config.num_attention_heads
        size = self.config.hidden_size // heads
        split = (batch, length, heads, size)
        query = layer.query(x).reshape(split).transpose(0, 2, 1, 3)
        query *= np.float32(1.0 / math.sqrt(size))
        key = layer.key(x).reshape(split).transpose(0, 2, 3, 1)
        value = layer.value(x).reshape(split).transpose(0, 2, 1, 3)
        context = np.empty(split, dtype=np.float32)
        step = max(1, _CACHE_FLOATS // (heads * length * length))
        for start in range(0, batch, step):
            part = slice(start, start + step)
            scores: Floats = query[part] @ key[part]  # (sequences, heads, length, length)
            scores += key_bias[part]
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context[part] = (scores @ value[part]).transpose(0, 2, 1, 3)
        return context.reshape(batch * length, -1)


def _feed_forward(layer: _Layer, x: Floats) -> Floats:
    return layer.output(gelu(layer.intermediate(x)))
