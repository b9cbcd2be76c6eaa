"""Embedding providers: MiniLM (semantic, offline), an OpenAI-compatible HTTP client, and a
deterministic hashing fallback, chosen by :func:`provider_from_config`.

Importing this package is cheap: it never imports torch (the MiniLM model loads on first use),
and the provider classes, with numpy and httpx behind them, are imported on first access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .base import DEFAULT_DIMENSIONS, EmbeddingProvider, content_hash
from .factory import VALID_EMBEDDERS, minilm_available, provider_from_config

if TYPE_CHECKING:
    from .hashing import HashingEmbedder
    from .openai_http import OpenAICompatibleEmbedder
    from .sentence import SentenceTransformerEmbedder

_LAZY = {
    "HashingEmbedder": ".hashing",
    "OpenAICompatibleEmbedder": ".openai_http",
    "SentenceTransformerEmbedder": ".sentence",
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
    "OpenAICompatibleEmbedder",
    "SentenceTransformerEmbedder",
    "content_hash",
    "minilm_available",
    "provider_from_config",
]
