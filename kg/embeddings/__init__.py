"""Embedding providers: MiniLM (semantic, offline), an OpenAI-compatible HTTP client, and a
deterministic hashing fallback, chosen by :func:`provider_from_config`.

Importing this package is cheap: the provider classes, with numpy, onnxruntime, tokenizers and
httpx behind them, are imported on first access, and the MiniLM model loads on its first use.
Nothing here runs torch: MiniLM runs on ONNX Runtime (:mod:`.minilm`); only its one-time export
(:mod:`.onnx_export`, in a process of its own) uses torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .base import DEFAULT_DIMENSIONS, EmbeddingProvider, content_hash
from .factory import VALID_EMBEDDERS, minilm_available, provider_from_config

if TYPE_CHECKING:
    from .hashing import HashingEmbedder
    from .minilm import MiniLMEmbedder
    from .openai_http import OpenAICompatibleEmbedder

_LAZY = {
    "HashingEmbedder": ".hashing",
    "MiniLMEmbedder": ".minilm",
    "OpenAICompatibleEmbedder": ".openai_http",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)


__all__ = [
    "DEFAULT_DIMENSIONS",
    "VALID_EMBEDDERS",
    "EmbeddingProvider",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "OpenAICompatibleEmbedder",
    "content_hash",
    "minilm_available",
    "provider_from_config",
]
