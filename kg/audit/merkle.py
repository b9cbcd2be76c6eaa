"""RFC 9162 Merkle tree hashing, inclusion and consistency proofs: pure functions, no database.

A tenant's log is the sequence of its events in position order; leaf ``i`` (0-based, the
tenant's own sequence, not the global position) has the leaf data ``bytes.fromhex(event.hash)``,
the event's 32-byte chain hash. The chain hash is ``sha256(prev_hash || canonical_json(event))``,
so a leaf commits to the event's whole content (and to the chain before it); a proof carries
the canonical event and its ``prev_hash`` so that a checker recomputes the chain hash itself.

Hashing (RFC 9162, section 2.1.1): ``leaf = SHA-256(0x00 || data)``,
``node = SHA-256(0x01 || left || right)``, the empty tree's root is ``SHA-256()``. A tree of
``n`` leaves splits at ``k``, the largest power of two below ``n``.

Stored nodes are *perfect* subtrees: ``(level, index)`` covers leaves
``[index * 2**level, (index + 1) * 2**level)``. Every hash a proof needs is a perfect node or
the hash of a range ``[start, end)`` with ``start`` aligned, which :func:`range_nodes` splits
into perfect nodes, so a proof costs O(log n) stored nodes (:func:`inclusion_nodes`,
:func:`consistency_nodes` list them, for one fetch).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

Node = tuple[int, int]  # (level, index) of a perfect subtree
Range = tuple[int, int]  # [start, end) of leaves


class ProofError(ValueError):
    """A proof does not verify (wrong length, wrong hashes, or sizes that make no sense)."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than ``n`` (``n >= 2``)."""
    return 1 << ((n - 1).bit_length() - 1)


def root_from_leaves(leaf_hashes: Sequence[bytes]) -> bytes:
    """MTH(D[n]) of the given leaf hashes (recursive definition; for tests and small trees)."""
    n = len(leaf_hashes)
    if n == 0:
        return EMPTY_ROOT
    if n == 1:
        return leaf_hashes[0]
    k = _split(n)
    return node_hash(root_from_leaves(leaf_hashes[:k]), root_from_leaves(leaf_hashes[k:]))


class CompactRange:
    """The right border of a growing tree: the perfect subtree roots of ``size`` leaves, one per
    set bit of ``size`` (RFC 9162's incremental construction; Trillian's "compact range").

    Appending a leaf costs one hash plus one per trailing set bit of the old size (amortised 2);
    the root folds the border from the smallest subtree up. The database keeps the same border
    in the tenant's ``kg_chain_heads`` row (``tree_size``, ``tree_border``); ``kg audit
    verify`` recomputes it with this class.
    """

    def __init__(self, size: int = 0, border: Mapping[int, bytes] | None = None) -> None:
        self.size = size
        self.border: dict[int, bytes] = dict(border or {})
        expected = {lv for lv in range(size.bit_length()) if size >> lv & 1}
        if set(self.border) != expected:
            raise ProofError(f"a compact range of size {size} needs levels {sorted(expected)}")

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Add one leaf hash; return the perfect nodes it completed, leaf included."""
        completed = [(0, self.size, leaf)]
        h, level, index = leaf, 0, self.size
        while index & 1:
            h = node_hash(self.border.pop(level), h)
            level, index = level + 1, index >> 1
            completed.append((level, index, h))
        self.border[level] = h
        self.size += 1
        return completed

    def root(self) -> bytes:
        if self.size == 0:
            return EMPTY_ROOT
        levels = sorted(self.border)
        h = self.border[levels[0]]
        for lv in levels[1:]:
            h = node_hash(self.border[lv], h)
        return h

    def nodes(self) -> list[Node]:
        """The border as (level, index) pairs, left (largest) first."""
        return border_nodes(self.size)


def border_nodes(size: int) -> list[Node]:
    """The perfect subtrees whose roots make up a tree of ``size`` leaves, left first."""
    nodes: list[Node] = []
    start = 0
    for level in range(size.bit_length() - 1, -1, -1):
        if size >> level & 1:
            nodes.append((level, start >> level))
            start += 1 << level
    return nodes


def range_nodes(start: int, end: int) -> list[Node]:
    """The perfect subtrees that make up the range ``[start, end)`` as RFC 9162 splits it.

    RFC 9162 only ever hashes ranges whose ``start`` is a multiple of the largest power of two
    not above ``end - start``; such a range is its border shifted by ``start``.
    """
    size = end - start
    if size <= 0:
        raise ProofError(f"empty range [{start}, {end})")
    nodes = []
    for level, index in border_nodes(size):
        offset = start + (index << level)
        if offset % (1 << level):
            raise ProofError(f"range [{start}, {end}) is not one RFC 9162 hashes")
        nodes.append((level, offset >> level))
    return nodes


def hash_nodes(nodes: Sequence[Node], lookup: Mapping[Node, bytes]) -> bytes:
    """The hash of a range made of ``nodes`` (left first): fold from the right."""
    h = lookup[nodes[-1]]
    for node in reversed(nodes[:-1]):
        h = node_hash(lookup[node], h)
    return h


def inclusion_ranges(index: int, size: int) -> list[Range]:
    """The ranges whose hashes form PATH(index, D[size]), bottom (nearest the leaf) first."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of {size} leaves")
    ranges: list[Range] = []
    start, end = 0, size
    while end - start > 1:
        k = _split(end - start)
        if index < start + k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start += k
    ranges.reverse()
    return ranges


def consistency_ranges(old_size: int, new_size: int) -> list[Range]:
    """The ranges whose hashes form PROOF(old_size, D[new_size]) (RFC 9162, 2.1.4.1)."""
    if not 0 < old_size <= new_size:
        raise ProofError(f"no consistency proof from {old_size} to {new_size} leaves")

    def subproof(m: int, start: int, end: int, complete: bool) -> list[Range]:
        if m == end - start:
            return [] if complete else [(start, end)]
        k = _split(end - start)
        if m <= k:
            return [*subproof(m, start, start + k, complete), (start + k, end)]
        return [*subproof(m - k, start + k, end, False), (start, start + k)]

    return subproof(old_size, 0, new_size, True)


def nodes_for(ranges: Iterable[Range]) -> set[Node]:
    needed: set[Node] = set()
    for start, end in ranges:
        needed.update(range_nodes(start, end))
    return needed


def hashes_for(ranges: Sequence[Range], lookup: Mapping[Node, bytes]) -> list[bytes]:
    return [hash_nodes(range_nodes(s, e), lookup) for s, e in ranges]


def verify_inclusion(
    index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes
) -> None:
    """RFC 9162, 2.1.3.2; raises :class:`ProofError` unless ``leaf`` is leaf ``index`` of the
    tree of ``size`` leaves whose root is ``root``."""
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} is outside a tree of {size} leaves")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("the inclusion proof is too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the inclusion proof is too short")
    if r != root:
        raise ProofError("the inclusion proof does not lead to the root")


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """RFC 9162, 2.1.4.2; raises :class:`ProofError` unless the tree of ``new_size`` leaves and
    root ``new_root`` extends the tree of ``old_size`` leaves and root ``old_root``."""
    if not 0 < old_size <= new_size:
        raise ProofError(f"no consistency between {old_size} and {new_size} leaves")
    if old_size == new_size:
        if proof:
            raise ProofError("a consistency proof between equal sizes must be empty")
        if old_root != new_root:
            raise ProofError("the roots of the same size differ")
        return
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # a power of two: the old root is the first node
        path.insert(0, old_root)
    if not path:
        raise ProofError("the consistency proof is empty")
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("the consistency proof is too long")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the consistency proof is too short")
    if fr != old_root:
        raise ProofError("the log does not extend the old tree: its first part hashes differently")
    if sr != new_root:
        raise ProofError("the consistency proof does not lead to the new root")
