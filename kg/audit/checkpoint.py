"""Signed checkpoints of a tenant's Merkle tree, in the C2SP signed-note format (Go's sumdb
``note`` package, Tessera): pure functions, no database.

A checkpoint's note text is (C2SP ``tlog-checkpoint``)::

    kg/<log id>/<tenant>            origin: this database's log (kg_merkle_log) and the tenant
    <tree size>                     decimal
    <root hash>                     base64
    kg-time <UTC ISO-8601>          extension line: when it was taken

followed by a blank line and one signature line ``— <key name> <base64(key hash || sig)>``, an
Ed25519 signature over the text. Key strings are the note package's: ``PRIVATE+KEY+<name>+
<hash>+<base64(0x01 || seed)>`` and ``<name>+<hash>+<base64(0x01 || public key)>``, where the
hash is the first four bytes of ``SHA-256(name || "\\n" || 0x01 || public key)``.

The file kg writes (``kg audit checkpoint -o FILE``) is JSON::

    {"format": "kg-checkpoint/1", "note": "<the signed note>", "verifier_key": "<name+hash+key>",
     "border": ["<hex>", ...]}

``border`` is the compact range at the checkpoint's size (the roots of its perfect subtrees,
left first); it is checked against the signed root on load, and lets ``kg audit verify
--checkpoint`` say which part of the log no longer matches.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from kg.audit.merkle import CompactRange, border_nodes
from kg.errors import EvidenceError

FORMAT = "kg-checkpoint/1"
ALG_ED25519 = 1
_NAME = re.compile(r"^[^\s+]{1,100}$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def origin_of(log_id: str, tenant_id: str) -> str:
    return f"kg/{log_id}/{tenant_id}"


def split_origin(origin: str) -> tuple[str, str]:
    """(log id, tenant) of an origin line; EvidenceError when it is not one of kg's."""
    parts = origin.split("/", 2)
    if len(parts) != 3 or parts[0] != "kg" or not _UUID.match(parts[1]) or not parts[2]:
        raise EvidenceError(f"origin {origin[:120]!r} is not a kg log's (kg/<log id>/<tenant>)")
    return parts[1], parts[2]


def _key_hash(name: str, public: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + bytes([ALG_ED25519]) + public).digest()[:4]


@dataclass(frozen=True)
class SignerKey:
    name: str
    private: Ed25519PrivateKey

    @property
    def public(self) -> bytes:
        return self.private.public_key().public_bytes_raw()

    def verifier(self) -> str:
        return verifier_key_string(self.name, self.public)

    def encode(self) -> str:
        seed = self.private.private_bytes_raw()
        return (
            f"PRIVATE+KEY+{self.name}+{_key_hash(self.name, self.public).hex()}+"
            f"{base64.b64encode(bytes([ALG_ED25519]) + seed).decode()}"
        )


def verifier_key_string(name: str, public: bytes) -> str:
    return (
        f"{name}+{_key_hash(name, public).hex()}+"
        f"{base64.b64encode(bytes([ALG_ED25519]) + public).decode()}"
    )


def generate_key(name: str) -> SignerKey:
    if not _NAME.match(name):
        raise EvidenceError(f"key name {name!r} is invalid: 1-100 characters, no spaces or '+'")
    return SignerKey(name, Ed25519PrivateKey.generate())


def load_signer(path: Path) -> SignerKey:
    text = _read(path, "key").strip()
    parts = text.split("+", 4)  # base64 may hold "+"
    if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]:
        raise EvidenceError(f"{path} is not a kg signing key (make one with `kg audit keygen`)")
    name, _, encoded = parts[2:]
    raw = _b64(encoded, path)
    if len(raw) != 33 or raw[0] != ALG_ED25519:
        raise EvidenceError(f"{path} is not an Ed25519 signing key")
    return SignerKey(name, Ed25519PrivateKey.from_private_bytes(raw[1:]))


def parse_verifier(text: str, where: str) -> tuple[str, bytes]:
    parts = text.strip().split("+", 2)
    if len(parts) != 3:
        raise EvidenceError(f"{where} is not a verifier key (name+hash+key)")
    name, key_hash, encoded = parts
    raw = _b64(encoded, where)
    if len(raw) != 33 or raw[0] != ALG_ED25519:
        raise EvidenceError(f"{where}: the verifier key is not an Ed25519 key")
    if _key_hash(name, raw[1:]).hex() != key_hash:
        raise EvidenceError(f"{where}: the verifier key's hash does not match its key")
    return name, raw[1:]


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    time: str
    note: str
    verifier_key: str
    border: tuple[bytes, ...]
    source: str = "checkpoint"

    @property
    def log_id(self) -> str:
        return split_origin(self.origin)[0]

    @property
    def tenant_id(self) -> str:
        return split_origin(self.origin)[1]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "note": self.note,
            "verifier_key": self.verifier_key,
            "border": [h.hex() for h in self.border],
        }

    def describe(self) -> str:
        return (
            f"{self.source}: tenant {self.tenant_id}, {self.size} events, root "
            f"{self.root.hex()[:16]}…, taken {self.time}"
        )


def sign_checkpoint(
    key: SignerKey,
    *,
    log_id: str,
    tenant_id: str,
    size: int,
    border: CompactRange,
    now: datetime | None = None,
) -> Checkpoint:
    """A checkpoint of the tree whose compact range is ``border`` (of ``size`` leaves)."""
    if border.size != size:
        raise ValueError("the compact range is of another size")
    origin = origin_of(log_id, tenant_id)
    root = border.root()
    moment = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = f"{origin}\n{size}\n{base64.b64encode(root).decode()}\nkg-time {moment}\n"
    signature = key.private.sign(text.encode())
    line = base64.b64encode(_key_hash(key.name, key.public) + signature).decode()
    note = f"{text}\n\u2014 {key.name} {line}\n"
    hashes = tuple(border.border[lv] for lv, _ in border_nodes(size))
    return Checkpoint(origin, size, root, moment, note, key.verifier(), hashes)


def open_note(note: str, verifier_key: str, where: str) -> tuple[str, int, bytes, str]:
    """Verify the note's signature with ``verifier_key``; return origin, size, root, time."""
    name, public = parse_verifier(verifier_key, where)
    text, sep, signatures = note.partition("\n\n")
    if not sep or not text:
        raise EvidenceError(f"{where}: the note has no signature block (truncated?)")
    text += "\n"
    wanted = _key_hash(name, public)
    verified = False
    for line in signatures.splitlines():
        if not line.startswith("\u2014 "):
            raise EvidenceError(f"{where}: malformed signature line {line[:60]!r}")
        parts = line[2:].split(" ")
        if len(parts) != 2:
            raise EvidenceError(f"{where}: malformed signature line {line[:60]!r}")
        raw = _b64(parts[1], where)
        if parts[0] != name or raw[:4] != wanted:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(public).verify(raw[4:], text.encode())
        except InvalidSignature:
            raise EvidenceError(
                f"{where}: the signature does not match the checkpoint: the file was altered "
                "or signed by another key"
            ) from None
        verified = True
    if not verified:
        raise EvidenceError(f"{where}: no signature by key {name!r}")
    lines = text.split("\n")[:-1]
    if len(lines) < 3 or not lines[1].isdigit():
        raise EvidenceError(f"{where}: the note is not a checkpoint (origin, size, root)")
    root = _b64(lines[2], where)
    if len(root) != 32:
        raise EvidenceError(f"{where}: the root hash is not 32 bytes")
    moment = next((x[len("kg-time ") :] for x in lines[3:] if x.startswith("kg-time ")), "?")
    split_origin(lines[0])
    return lines[0], int(lines[1]), root, moment


def load_checkpoint(path: Path, *, trusted_key: str | None = None) -> Checkpoint:
    """Read and verify a checkpoint file. ``trusted_key`` (a verifier key string) must then be
    the key that signed it: without it the file's own key is used, which proves integrity of
    the file but not who signed it."""
    data = _json(path, "checkpoint")
    if data.get("format") != FORMAT:
        raise EvidenceError(f"{path} is not a kg checkpoint (format {data.get('format')!r})")
    try:
        note, key, border_hex = data["note"], data["verifier_key"], data["border"]
        border = tuple(bytes.fromhex(h) for h in border_hex)
    except (KeyError, TypeError, ValueError) as exc:
        raise EvidenceError(f"{path}: the checkpoint lacks or garbles {exc}") from None
    if not isinstance(note, str) or not isinstance(key, str):
        raise EvidenceError(f"{path}: note and verifier_key must be strings")
    if trusted_key is not None:
        trusted = check_trusted_key(trusted_key)
        if key.strip() != trusted:
            raise EvidenceError(
                f"{path} was not signed with the key you trust ({key_name(trusted)}): it names "
                f"the key {key_name(key)}"
            )
    origin, size, root, moment = open_note(note, key, str(path))
    nodes = border_nodes(size)
    if len(border) != len(nodes):
        raise EvidenceError(f"{path}: the border has {len(border)} hashes, not {len(nodes)}")
    compact = CompactRange(size, {lv: h for (lv, _), h in zip(nodes, border, strict=True)})
    if compact.root() != root:
        raise EvidenceError(f"{path}: the border does not hash to the signed root")
    return Checkpoint(origin, size, root, moment, note, key, border, str(path))


def key_name(verifier: str) -> str:
    """The name part of a verifier key (``name+hash+key``), to say which key without the key."""
    return repr(verifier.strip().split("+", 1)[0][:60])


def check_trusted_key(text: str) -> str:
    """``text`` (the key a reviewer trusts) when it is a well-formed verifier key. A private
    signing key given by mistake is refused without printing any of it."""
    text = text.strip()
    if text.upper().startswith("PRIVATE+KEY"):
        raise EvidenceError(
            "the trusted key given is a private signing key, not a verifier key: pass the "
            "verifier key (the .pub file `kg audit keygen` wrote next to it). Nothing of the "
            "private key was printed; keep it out of shared places"
        )
    parse_verifier(text, "the trusted key")
    return text


def untrusted_note(cp: Checkpoint) -> str:
    """What a check without a trusted key must say: the signature proves the file is intact,
    not who signed it (anyone can sign a checkpoint with a key of their own)."""
    return (
        f"warning: {cp.source} is signed by the key {key_name(cp.verifier_key)} "
        f"({cp.verifier_key.strip()}), which you have not said you trust: the signature proves "
        "the file is intact, not who signed it. Pass --trusted-key KEY|FILE (--key for the "
        "offline checker) to require your key"
    )


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvidenceError(f"{what} file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvidenceError(f"cannot read {what} file {path}: {exc}") from None


def _json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(_read(path, what))
    except RecursionError:
        raise EvidenceError(f"{path} is nested too deeply to be a kg {what}") from None
    except json.JSONDecodeError as exc:
        raise EvidenceError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}): truncated or not a "
            f"kg {what}"
        ) from None
    if not isinstance(data, dict):
        raise EvidenceError(f"{path} is not a kg {what}")
    return data


def _b64(text: str, where: object) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise EvidenceError(f"{where}: a field that must be base64 is not") from None
