"""Check an inclusion proof offline: ``python -m kg.audit.check_proof proof.json checkpoint.json``.

No database and no database driver: this module imports only the pure hashing and checkpoint
code, so a reviewer can run it anywhere kg is installed. For each event in the proof it checks
that ``sha256(prev_hash || canonical_event)`` is the event's chain hash (so the event's content
is what the proof shows), that the leaf ``sha256(0x00 || chain hash)`` is included at its index
in the tree of the checkpoint's size, and that the tree's root is the checkpoint's signed root.
Exit 0 when everything holds, 1 with ``error: ...`` otherwise.

``--key VERIFIER`` (a verifier key string or a file holding one, as ``kg audit keygen`` writes
next to the private key) requires the checkpoint to be signed by that key.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from kg.audit.checkpoint import Checkpoint, load_checkpoint, split_origin, untrusted_note
from kg.audit.merkle import ProofError, leaf_hash, verify_inclusion
from kg.errors import EvidenceError, KgError

PROOF_FORMAT = "kg-inclusion-proof/1"


def load_proof(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvidenceError(f"proof file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvidenceError(f"cannot read proof file {path}: {exc}") from None
    except RecursionError:
        raise EvidenceError(f"{path} is nested too deeply to be a kg proof") from None
    except json.JSONDecodeError as exc:
        raise EvidenceError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}): truncated or not a "
            "kg proof"
        ) from None
    if not isinstance(data, dict) or data.get("format") != PROOF_FORMAT:
        raise EvidenceError(f"{path} is not a kg inclusion proof")
    return data


def check(proof: dict[str, Any], cp: Checkpoint, source: str = "proof") -> list[str]:
    """The lines of a passing check; :class:`EvidenceError` at the first thing that fails."""
    try:
        origin, size, root = proof["origin"], int(proof["tree_size"]), proof["root_hash"]
        entries = list(proof["entries"])
    except (KeyError, TypeError, ValueError) as exc:
        raise EvidenceError(f"{source} lacks or garbles {exc}") from None
    if origin != cp.origin:
        log_id, tenant = split_origin(str(origin))
        if log_id != cp.log_id:
            raise EvidenceError(
                f"{source} is a proof for another log ({log_id}) than {cp.source}'s ({cp.log_id})"
            )
        raise EvidenceError(
            f"{source} is a proof for tenant {tenant!r}, {cp.source} is of {cp.tenant_id!r}"
        )
    if size != cp.size or root != cp.root.hex():
        raise EvidenceError(
            f"{source} is for a tree of {size} events, {cp.source} for {cp.size}: make the proof "
            f"with `kg audit prove ... --checkpoint {cp.source}`"
        )
    if not entries:
        raise EvidenceError(f"{source} proves no event")
    lines = []
    for k, entry in enumerate(entries):
        lines.append(_check_entry(entry, cp, f"{source}, entry {k + 1}"))
    return lines


def _check_entry(entry: dict[str, Any], cp: Checkpoint, where: str) -> str:
    try:
        canonical = str(entry["canonical_event"])
        prev_hash, chain_hash = str(entry["prev_hash"]), str(entry["chain_hash"])
        index, position = int(entry["leaf_index"]), int(entry["position"])
        path = [bytes.fromhex(h) for h in entry["path"]]
        event = json.loads(canonical)
        chain = bytes.fromhex(chain_hash)
    except RecursionError:
        raise EvidenceError(f"{where}: its event is nested too deeply to be a kg event") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise EvidenceError(f"{where} lacks or garbles {exc}") from None
    if hashlib.sha256(prev_hash.encode() + canonical.encode()).hexdigest() != chain_hash:
        raise EvidenceError(f"{where}: the event's content does not hash to its chain hash")
    if event.get("position") != position or event.get("tenant_id") != cp.tenant_id:
        raise EvidenceError(
            f"{where}: the event is not the one at position {position} of the tenant"
        )
    try:
        verify_inclusion(index, cp.size, leaf_hash(chain), path, cp.root)
    except ProofError as exc:
        raise EvidenceError(f"{where}: {exc}") from None
    return (
        f"ok: position {position} ({event.get('event_type')}, event {event.get('event_id')}) is "
        f"event {index + 1} of {cp.size} under the signed root {cp.root.hex()[:16]}…"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kg.audit.check_proof",
        description="Check a kg inclusion proof against a signed checkpoint, offline.",
    )
    parser.add_argument("proof", type=Path)
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--key", help="the verifier key (or a file holding it) to require")
    args = parser.parse_args(argv)
    try:
        key = args.key
        if key and Path(key).is_file():
            key = Path(key).read_text(encoding="utf-8").strip()
        cp = load_checkpoint(args.checkpoint, trusted_key=key)
        lines = check(load_proof(args.proof), cp, str(args.proof))
    except KgError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    print(f"all {len(lines)} events are in the log signed by {cp.describe()}")
    if not key:
        print(untrusted_note(cp), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
