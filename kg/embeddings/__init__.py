"""Embedding providers: MiniLM (semantic, offline), an OpenAI-compatible HTTP client, and a
deterministic hashing fallback, chosen by :func:`provider_from_config`.

Importing this package never imports torch; the MiniLM model loads on first use.
"""

from .base import DEFAULT_DIMENSIONS, EmbeddingProvider, content_hash
from .factory import VALID_EMBEDDERS, minilm_available, provider_from_config
from .hashing import HashingEmbedder
from .openai_http import OpenAICompatibleEmbedder
from .sentence import SentenceTransformerEmbedder

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
