"""RFC 9162 hashing and proofs against the Certificate Transparency reference vectors (the
RFC 6962 test data of google/certificate-transparency, reused by transparency-dev/merkle)."""

from __future__ import annotations

import hashlib

import pytest

from kg.audit.merkle import (
    EMPTY_ROOT,
    CompactRange,
    ProofError,
    consistency_ranges,
    hashes_for,
    inclusion_ranges,
    leaf_hash,
    nodes_for,
    root_from_leaves,
    verify_consistency,
    verify_inclusion,
)

LEAVES = [bytes.fromhex(h) for h in ("", "00", "10", "2021", "3031", "40414243",
          "5051525354555657", "606162636465666768696a6b6c6d6e6f")]  # fmt: skip
ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
INCLUSION = [  # (0-based leaf index, tree size, path)
    (0, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (5, 8, ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (1, 5, ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]  # fmt: skip
CONSISTENCY = [  # (old size, new size, proof)
    (1, 1, []),
    (1, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (6, 8, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 5, ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]  # fmt: skip


def stored(leaves: list[bytes]) -> dict[tuple[int, int], bytes]:
    """Every perfect node of the tree, as the database keeps them, built incrementally."""
    tree = CompactRange()
    nodes: dict[tuple[int, int], bytes] = {}
    for leaf in leaves:
        nodes.update({(lv, i): h for lv, i, h in tree.append(leaf_hash(leaf))})
    return nodes


def test_roots_match_the_reference_for_every_size() -> None:
    assert EMPTY_ROOT.hex() == hashlib.sha256(b"").hexdigest()
    assert root_from_leaves([]) == EMPTY_ROOT
    tree = CompactRange()
    for n, leaf in enumerate(LEAVES, 1):
        tree.append(leaf_hash(leaf))
        assert root_from_leaves([leaf_hash(x) for x in LEAVES[:n]]).hex() == ROOTS[n - 1]
        assert tree.root().hex() == ROOTS[n - 1], f"incremental root at size {n}"


@pytest.mark.parametrize(("index", "size", "path"), INCLUSION)
def test_inclusion_proofs_match_the_reference(index: int, size: int, path: list[str]) -> None:
    nodes = stored(LEAVES[:size])
    proof = hashes_for(inclusion_ranges(index, size), nodes)
    assert [p.hex() for p in proof] == path
    root = bytes.fromhex(ROOTS[size - 1])
    verify_inclusion(index, size, leaf_hash(LEAVES[index]), proof, root)
    with pytest.raises(ProofError):
        verify_inclusion(index, size, leaf_hash(b"forged"), proof, root)
    with pytest.raises(ProofError):
        verify_inclusion(index, size, leaf_hash(LEAVES[index]), proof[:-1], root)


@pytest.mark.parametrize(("old", "new", "path"), CONSISTENCY)
def test_consistency_proofs_match_the_reference(old: int, new: int, path: list[str]) -> None:
    nodes = stored(LEAVES[:new])
    proof = hashes_for(consistency_ranges(old, new), nodes)
    assert [p.hex() for p in proof] == path
    old_root, new_root = bytes.fromhex(ROOTS[old - 1]), bytes.fromhex(ROOTS[new - 1])
    verify_consistency(old, new, old_root, new_root, proof)
    if old != new:
        with pytest.raises(ProofError):
            verify_consistency(old, new, bytes.fromhex(ROOTS[0 if old > 1 else 2]), new_root, proof)


def test_every_proof_of_every_shape_round_trips() -> None:
    leaves = [leaf_hash(bytes([i, i * 7 % 256])) for i in range(70)]
    nodes = stored([bytes([i, i * 7 % 256]) for i in range(70)])
    for size in range(1, 71):
        root = root_from_leaves(leaves[:size])
        for index in range(size):
            ranges = inclusion_ranges(index, size)
            assert nodes_for(ranges) <= set(nodes)
            verify_inclusion(index, size, leaves[index], hashes_for(ranges, nodes), root)
        for old in range(1, size + 1):
            proof = hashes_for(consistency_ranges(old, size), nodes)
            verify_consistency(old, size, root_from_leaves(leaves[:old]), root, proof)


def test_a_rewritten_leaf_breaks_consistency_with_the_old_root() -> None:
    leaves = [leaf_hash(bytes([i])) for i in range(20)]
    old_root = root_from_leaves(leaves[:13])
    leaves[4] = leaf_hash(b"rewritten")
    nodes = stored([])  # build from the rewritten leaves
    tree = CompactRange()
    for leaf in leaves:
        nodes.update({(lv, i): h for lv, i, h in tree.append(leaf)})
    proof = hashes_for(consistency_ranges(13, 20), nodes)
    with pytest.raises(ProofError, match="does not extend"):
        verify_consistency(13, 20, old_root, tree.root(), proof)
