"""Export the packaged all-MiniLM-L6-v2 to ONNX once, offline.

Run as ``python -m kg.embeddings.onnx_export [--variant int8|fp32] [--force]``.

torch (installed with the model package, which depends on sentence-transformers) traces the
Hugging Face ``BertModel`` with mean pooling into one graph, ``(input_ids, attention_mask) ->
pooled``; ONNX Runtime's transformer optimiser fuses its embeddings, attention, GELU and
LayerNorms into single kernels; the ``int8`` variant then quantises the weights of its matrix
products (dynamic quantisation: activations are quantised per batch at run time). The file
goes to :func:`kg.embeddings.onnx_model.model_cache_dir`, with a manifest naming the weights
it came from, so an unchanged export is skipped and a changed model package is re-exported.

Only this module imports torch, and only in the process that exports: ``kg`` runs the file
with ``onnxruntime`` alone (:mod:`kg.embeddings.minilm`), and exports through this module in a
child process when the file is missing (:func:`kg.embeddings.onnx_model.ensure_exported`).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kg.embeddings.onnx_model import (
    RECIPE,
    VARIANTS,
    WEIGHTS,
    manifest_path,
    model_cache_dir,
    onnx_path,
    read_manifest,
    source_stat,
)

HEADS = 12
HIDDEN = 384


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def source_sha256(source: Path) -> dict[str, str]:
    return {name: file_sha256(source / name) for name in WEIGHTS}


def up_to_date(source: Path, variant: str, cache: Path) -> bool:
    """Whether ``cache`` holds the ``variant`` export of ``source``'s weights, by this recipe,
    with the bytes the manifest names (a truncated or edited file is exported again). When
    only the source files' times changed (a reinstall of the same package), the manifest is
    brought up to date instead of exporting again."""
    target = onnx_path(cache, variant, source)
    manifest = read_manifest(cache, variant, source)
    if manifest is None or not target.is_file():
        return False
    same = bool(
        manifest.get("recipe") == RECIPE
        and manifest.get("source_sha256") == source_sha256(source)
        and manifest.get("onnx_sha256") == file_sha256(target)
    )
    if same and manifest.get("source_stat") != source_stat(source):
        _write_manifest(cache, variant, source, manifest | {"source_stat": source_stat(source)})
    return same


def _write_manifest(cache: Path, variant: str, source: Path, manifest: dict[str, Any]) -> None:
    final = manifest_path(cache, variant, source)
    staged = final.with_name(final.name + ".tmp")
    staged.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    os.replace(staged, final)


@contextlib.contextmanager
def _exclusive(cache: Path) -> Iterator[None]:
    """One exporter at a time per cache folder (parallel test workers, two shells)."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".export.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _trace(source: Path, target: Path) -> None:
    """The fp32 graph, as traced by torch's TorchScript exporter (its graph is the one ONNX
    Runtime's BERT fusions recognise; eager attention, not SDPA, for the same reason)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: nothing to fetch, ever
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    model = AutoModel.from_pretrained(str(source), attn_implementation="eager")
    model.eval()

    class Pooled(torch.nn.Module):
        """sentence-transformers' mean pooling over the real (unpadded) word pieces."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            states = self.bert(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=torch.zeros_like(input_ids),
            ).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(states.dtype)
            return (states * weights).sum(1) / weights.sum(1).clamp(min=1e-9)

    ids = torch.ones((2, 16), dtype=torch.int64)
    axes = {0: "batch", 1: "length"}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pooled(),
            (ids, torch.ones_like(ids)),
            str(target),
            input_names=["input_ids", "attention_mask"],
            output_names=["pooled"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "pooled": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )


def _optimise(traced: Path, target: Path) -> None:
    from onnxruntime.transformers.optimizer import optimize_model

    model = optimize_model(
        str(traced), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN, opt_level=0
    )
    fused = model.get_fused_operator_statistics()
    if fused.get("Attention", 0) != 6 or fused.get("EmbedLayerNormalization", 0) != 1:
        raise RuntimeError(f"ONNX Runtime's optimiser did not fuse the encoder: {fused}")
    model.save_model_to_file(str(target))


def _quantise(fp32: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Its advice to pre-process applies to static quantisation; dynamic needs none.
    logging.getLogger().setLevel(logging.ERROR)

    # Per output channel, unsigned weights: per-tensor scales (one per weight matrix) left the
    # vectors at a cosine of ~0.93 to the reference, reduce_range and signed weights
    # lower than unsigned on 2,000 real sections (bench/RESULTS.md).
    quantize_dynamic(
        str(fp32),
        str(target),
        weight_type=QuantType.QUInt8,
        per_channel=True,
        # The fused operators are in Microsoft's domain, which shape inference does not know.
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )


def export(source: Path, variant: str, cache: Path | None = None, *, force: bool = False) -> Path:
    """Export ``source`` (a sentence-transformers MiniLM folder) as ``variant`` into ``cache``
    unless an up-to-date export is there; return the ONNX file's path."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    cache = cache or model_cache_dir()
    target = onnx_path(cache, variant, source)
    with _exclusive(cache):
        if not force and up_to_date(source, variant, cache):
            return target
        with tempfile.TemporaryDirectory(dir=cache, prefix=".export-") as scratch:
            work = Path(scratch)
            _trace(source, work / "traced.onnx")
            _optimise(work / "traced.onnx", work / "fp32.onnx")
            made = work / "fp32.onnx"
            if variant == "int8":
                _quantise(made, work / "int8.onnx")
                made = work / "int8.onnx"
            manifest = {
                "recipe": RECIPE,
                "variant": variant,
                "source": str(source.resolve()),
                "source_sha256": source_sha256(source),
                "source_stat": source_stat(source),
                "onnx_sha256": file_sha256(made),
                "onnx_size": made.stat().st_size,
            }
            # The file first, then the manifest that vouches for it: a crash between the two
            # leaves a manifest that does not match, so the next run exports again.
            os.replace(made, target)
            _write_manifest(cache, variant, source, manifest)
    return target


def main(argv: list[str] | None = None) -> int:
    from kg.embeddings.minilm import DEFAULT_VARIANT, packaged_model_path

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--variant", choices=VARIANTS, action="append")
    parser.add_argument("--cache", type=Path, help="folder for the file (default: kg's cache)")
    parser.add_argument("--source", type=Path, help="model folder (default: the packaged one)")
    parser.add_argument("--force", action="store_true", help="export even when up to date")
    args = parser.parse_args(argv)
    source = args.source or packaged_model_path()
    for variant in args.variant or [DEFAULT_VARIANT]:
        path = export(source, variant, args.cache, force=args.force)
        print(f"{variant}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
