"""Read the float32 tensors of a ``.safetensors`` file as read-only, memory-mapped numpy arrays.

The format is an 8-byte little-endian header length, a JSON header mapping each tensor name to
its ``dtype``, ``shape`` and ``data_offsets`` (relative to the end of the header), then the raw
little-endian data. The ``safetensors`` package's numpy backend copies every tensor into
private memory (~90 MB for MiniLM, plus the file mapping while it reads); mapping the file
instead costs nothing at load time, keeps untouched pages (most of the 30,522-row word
embedding table) out of memory, and lets every process on the machine share the same pages
through the page cache.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_MAX_HEADER = 100_000_000
"""The format's own limit on the header size, in bytes."""


class SafetensorsFormatError(ValueError):
    """The file is not a well-formed safetensors file (or holds a tensor we cannot read)."""


def read_float32_tensors(path: Path) -> dict[str, npt.NDArray[np.float32]]:
    """Map every ``F32`` tensor of ``path``; tensors of other types (MiniLM ships an ``I64``
    ``position_ids`` buffer nobody needs) are skipped. Raises :class:`SafetensorsFormatError`
    when the header is malformed or a tensor's bytes do not match its shape."""
    import numpy as np

    with path.open("rb") as file:
        prefix = file.read(8)
        if len(prefix) != 8:
            raise SafetensorsFormatError(f"{path} is too short to be a safetensors file")
        header_size = int.from_bytes(prefix, "little")
        if not 0 < header_size <= _MAX_HEADER:
            raise SafetensorsFormatError(f"{path} has an implausible header size {header_size}")
        try:
            header = json.loads(file.read(header_size))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SafetensorsFormatError(f"{path} has a header that is not JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise SafetensorsFormatError(f"{path} has a header that is not a JSON object")
    start = 8 + header_size
    data = np.memmap(path, dtype=np.uint8, mode="r")
    tensors: dict[str, npt.NDArray[np.float32]] = {}
    for name, info in header.items():
        if name == "__metadata__" or not isinstance(info, dict) or info.get("dtype") != "F32":
            continue
        try:
            shape = [int(n) for n in info["shape"]]
            begin, end = (int(n) for n in info["data_offsets"])
        except (KeyError, TypeError, ValueError) as exc:
            raise SafetensorsFormatError(f"{path}: tensor {name!r} has a bad entry") from exc
        if begin < 0 or end - begin != 4 * math.prod(shape) or start + end > data.size:
            raise SafetensorsFormatError(
                f"{path}: tensor {name!r} of shape {shape} does not fit bytes {begin}..{end} "
                f"(the file holds {data.size - start} data bytes); the file is truncated or corrupt"
            )
        tensors[name] = data[start + begin : start + end].view("<f4").reshape(shape)
    return tensors
