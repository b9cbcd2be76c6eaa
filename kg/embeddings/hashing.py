"""A deterministic lexical embedder that needs no model: the fallback when MiniLM is absent.

Each lowercase word contributes a feature for the word itself plus features for its
character trigrams (fastText style, with ``<`` and ``>`` marking the word boundaries), so
near-spellings such as ``colour``/``color`` or ``index``/``indexes`` still overlap. Every
feature is hashed with blake2b, which, unlike Python's ``hash()``, is stable across processes
and machines, into one of ``dimensions`` buckets with a sign bit (the signed "hashing trick"
keeps collisions from systematically inflating similarity). A word seen n times counts
1 + ln(n) times, so repeated filler words ("the", "a") do not swamp the rest. Vectors are the
L2-normalised sums.

The vectors capture shared vocabulary only, not meaning: callers should say so when they use
this provider (``is_fallback`` is True).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from kg.errors import ConfigurationError

from .base import DEFAULT_DIMENSIONS, l2_normalise

_WORD = re.compile(r"\w+")

_WORD_WEIGHT = 1.0
"""Weight of the whole-word feature; a word's trigrams together weigh about as much."""

_WORD_CACHE_SIZE = 1 << 17
"""Distinct (word, dimensions) pairs whose features are memoised. Text reuses a small
vocabulary, so the cache turns hashing into dictionary look-ups for almost every word."""

_TRIGRAM_CACHE_SIZE = 1 << 16
"""Trigrams are far fewer than words, so a new word mostly costs one hash: its own."""


def _hash_feature(feature: str, dimensions: int) -> tuple[int, bool]:
    """Bucket and sign of ``feature``: blake2b, so the same on every process and machine."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return (value >> 1) % dimensions, bool(value & 1)


_hash_trigram = lru_cache(maxsize=_TRIGRAM_CACHE_SIZE)(_hash_feature)


@lru_cache(maxsize=_WORD_CACHE_SIZE)
def _word_features(word: str, dimensions: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Return the bucket indices and signed weights of ``word`` and its character trigrams."""
    padded = f"<{word}>"
    # Distinct prefixes keep the word "the" and the trigram "the" in separate features.
    bucket, positive = _hash_feature(f"w:{word}", dimensions)
    buckets = [bucket]
    weights = [_WORD_WEIGHT if positive else -_WORD_WEIGHT]
    trigram_weight = 1.0 / math.sqrt(len(word))  # a word of n characters has n trigrams
    for i in range(len(word)):  # one loop, no intermediate pairs: most words are new once
        bucket, positive = _hash_trigram(f"t:{padded[i : i + 3]}", dimensions)
        buckets.append(bucket)
        weights.append(trigram_weight if positive else -trigram_weight)
    return tuple(buckets), tuple(weights)


class HashingEmbedder:
    """Feature-hashing embedder over words and character trigrams; see the module docstring."""

    is_fallback: bool = True

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        if dimensions < 1:
            raise ConfigurationError(
                f"hashing embedder: dimensions must be a positive integer, got {dimensions}. "
                f"Leave KG_EMBEDDER_DIMENSIONS unset to use {DEFAULT_DIMENSIONS}."
            )
        self.dimensions: int = dimensions
        self.model_id: str = f"hashing-v1-{dimensions}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``: one unit-norm vector per text, in input order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single string")
        if not texts:
            return []
        import numpy as np  # here, not at module level: a command that embeds nothing skips it

        dims = self.dimensions
        # All texts go into one flat bincount: the slot of a feature is row * dims + bucket.
        buckets: list[int] = []
        weights: list[float] = []
        counts: list[int] = []
        for text in texts:
            before = len(buckets)
            for word, occurrences in Counter(_WORD.findall(text.lower())).items():
                word_buckets, word_weights = _word_features(word, dims)
                buckets.extend(word_buckets)
                if occurrences == 1:
                    weights.extend(word_weights)
                else:
                    scale = 1.0 + math.log(occurrences)
                    weights.extend([w * scale for w in word_weights])
            counts.append(len(buckets) - before)
        row_offsets = np.repeat(np.arange(len(texts), dtype=np.int64) * dims, counts)
        flat = np.bincount(
            np.asarray(buckets, dtype=np.int64) + row_offsets,
            weights=np.asarray(weights, dtype=np.float64),
            minlength=len(texts) * dims,
        )
        matrix = flat.astype(np.float64, copy=False).reshape(len(texts), dims)
        empty = ~matrix.any(axis=1)
        # Texts without a single word get this fixed unit vector instead of a zero vector, so
        # cosine distance to them stays defined (and all such texts are identical to each other).
        matrix[empty] = 1.0 / math.sqrt(dims)
        result: list[list[float]] = l2_normalise(matrix).tolist()
        return result
