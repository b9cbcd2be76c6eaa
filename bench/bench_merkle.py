"""The Merkle tree's costs: append throughput with the tree maintained vs. without, and at
1,000,000 events the inclusion proof (size, time) and the consistency check of a checkpoint.

Before/after in one session and one database: the append function is swapped with ``CREATE OR
REPLACE`` (as the superuser) between today's (migration 0016: extends the tree, its frontier
read and written with the tenant's head row) and the same function without the tree (migration
0013's per-tenant append without its one call of ``kg_merkle_extend``, which is all that 0016
changed in it), and the two alternate run by run (A B A B ...), so load from other jobs on the
machine hits both alike. The 1M-event log is written in bulk (COPY as the superuser, real chain hashes, the
append-only trigger untouched: it only refuses UPDATE/DELETE/TRUNCATE), and its tree built by
``kg_merkle_rebuild``, the migration's backfill, in chunks of 50,000.

Run: python bench/bench_merkle.py [--runs 5] [--events 1000000] [--server-only] (``--runs 0``:
proofs only, ``--events 0``: throughput only, ``--server-only``: the append function alone,
``--extend-only``: the tree's extension alone)
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import io
import json
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's kg

from bench_event_store import append_rate
from common import fresh_database, machine, median, percentile

from kg.audit import tree
from kg.audit.merkle import verify_consistency, verify_inclusion
from kg.db.connect import create_pool
from kg.db.tenancy import set_tenant, tenant_transaction
from kg.events import EventStore
from kg.events.hashing import GENESIS_HASH, canonical_event, chain_hash

ROOT = Path(__file__).resolve().parent.parent


def _migration(name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, ROOT / "migrations" / "versions" / name)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


m0013 = _migration("0013_tenant_order.py")
m0016 = _migration("0016_frontier_in_chain_head.py")
# The tree's one line in migration 0013's per-tenant append function: removed for the runs
# "without the tree" (0016 changed only the tree's part of that function).
_EXTEND = "    PERFORM kg_merkle_extend(p_tenant, p_positions, p_hashes);\n"


def append_without_tree(schema: str) -> str:
    functions: str = m0013._functions(schema)  # type: ignore[attr-defined]
    start = functions.index("CREATE OR REPLACE FUNCTION kg_append_events(")
    append = functions[start : functions.index("CREATE OR REPLACE FUNCTION kg_merkle_rebuild")]
    assert append.count(_EXTEND) == 1, "migration 0013's append function changed"
    return append.replace(_EXTEND, "")


async def set_tree(system: object, on: bool) -> None:
    schema = str(await system.fetchval("SELECT current_schema()"))  # type: ignore[attr-defined]
    sql = m0016.append_sql(schema) if on else append_without_tree(schema)  # type: ignore[attr-defined]
    await system.execute(sql)  # type: ignore[attr-defined]


async def throughput(store: EventStore, system: object, runs: int) -> list[str]:
    cases = [
        ("1 writer, 1 event per append", 1, 1, 2_000),
        ("1 writer, batches of 10", 1, 10, 10_000),
        ("1 writer, batches of 100", 1, 100, 20_000),
        ("1 writer, batches of 1,000", 1, 1000, 50_000),
        ("8 writers, batches of 10", 8, 10, 8_000),
        ("8 writers, batches of 100", 8, 100, 40_000),
    ]
    lines = [
        "| append case | without tree, events/s | with tree, events/s | change | runs (without / with) |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for name, writers, size, total in cases:
        without: list[float] = []
        with_tree: list[float] = []
        for _ in range(runs):
            for on, out in ((False, without), (True, with_tree)):
                await set_tree(system, on)
                out.append(await append_rate(store, writers, size, total))
        a, b = median(without), median(with_tree)
        lines.append(
            f"| {name} | {a:,.0f} | {b:,.0f} | {100 * (b - a) / a:+.1f}% | "
            f"{', '.join(f'{r:,.0f}' for r in without)} / "
            f"{', '.join(f'{r:,.0f}' for r in with_tree)} |"
        )
    await set_tree(system, True)
    return lines


_SERVER_APPEND = """
SELECT kg_append_events($1, 'p', now(), NULL, $2::bigint[], $3::uuid[], $4::text[], $5::int[],
                        $6::text[], $7::int[], $8::text[], $9::text[], $10::text[], $11::text[])
"""


async def server_side(system: object, writers: int, size: int, appends: int, tenants: int) -> float:
    """Events/s of the append function alone: ``writers`` connections (superuser, so no RLS
    and no Python hashing) each making ``appends`` appends of ``size`` events, spread over
    ``tenants`` fresh tenants; hashes are random but chained, which is all the function checks.
    The tree's share of an append's server time, without the client's work diluting it."""
    run = uuid.uuid4().hex[:6]
    payload = '{"name":"Bulk","node_id":"document:bulk","node_type":"Document"}'
    heads: dict[str, tuple[int, str]] = {}
    locks = {f"t{k}-{run}": asyncio.Lock() for k in range(tenants)}

    async def write(w: int) -> None:
        tenant = f"t{w % tenants}-{run}"
        async with system.acquire() as conn:  # type: ignore[attr-defined]
            for a in range(appends):
                async with locks[tenant]:  # positions and links are decided here, not raced
                    head, prev = heads.get(tenant, (0, GENESIS_HASH))
                    hashes = [uuid.uuid4().hex * 2 for _ in range(size)]
                    heads[tenant] = (head + size, hashes[-1])
                    async with conn.transaction():
                        await set_tenant(conn, tenant)
                        await conn.execute(
                            _SERVER_APPEND, tenant, list(range(head + 1, head + size + 1)),
                            [uuid.uuid4() for _ in range(size)], [f"s{w}-{a}"] * size,
                            list(range(1, size + 1)), ["NodeAsserted"] * size, [1] * size,
                            [payload] * size, ["{}"] * size, [prev, *hashes[:-1]], hashes,
                        )  # fmt: skip

    started = time.perf_counter()
    await asyncio.gather(*(write(w) for w in range(writers)))
    return writers * appends * size / (time.perf_counter() - started)


async def server_throughput(system: object, runs: int) -> list[str]:
    lines = [
        "| append function alone (server side) | without tree, events/s | with tree, events/s "
        "| change | runs (without / with) |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for name, writers, size, appends in (
        ("1 writer, batches of 10", 1, 10, 400),
        ("8 writers (4 tenants), batches of 10", 8, 10, 100),
    ):
        without: list[float] = []
        with_tree: list[float] = []
        for _ in range(runs):
            for on, out in ((False, without), (True, with_tree)):
                await set_tree(system, on)
                out.append(await server_side(system, writers, size, appends, 4))
        a, b = median(without), median(with_tree)
        lines.append(
            f"| {name} | {a:,.0f} | {b:,.0f} | {100 * (b - a) / a:+.1f}% | "
            f"{', '.join(f'{r:,.0f}' for r in without)} / "
            f"{', '.join(f'{r:,.0f}' for r in with_tree)} |"
        )
    await set_tree(system, True)
    return lines


# One append's head-row work and the tree's, ``{last} + 1`` times, each in its own
# transaction as each append is: lock and read the head row, extend the tree (``{tree}``),
# write the head row (``{update}``: the frontier too, where 0016 keeps it there).
_EXTEND_LOOP = """
DO $$ DECLARE i int; h text[]; p bigint[]; pos bigint; hs text; b bytea[]; s bigint; BEGIN
 INSERT INTO bench_head VALUES ('{tenant}', 0, '', 0, '{{}}');
 FOR i IN 0..{last} LOOP
   p := ARRAY(SELECT generate_series(i * {size} + 1, i * {size} + {size})::bigint);
   h := ARRAY(SELECT md5(x::text) || md5(x::text) FROM unnest(p) x);
   SELECT position, hash, {read} INTO pos, hs, s, b
     FROM bench_head WHERE tenant_id = '{tenant}' FOR UPDATE;
   {tree}
   UPDATE bench_head SET position = pos + {size}, hash = h[{size}]{update}
    WHERE tenant_id = '{tenant}';
   COMMIT;
 END LOOP; END $$;
"""
_HEAD = (
    "CREATE TABLE IF NOT EXISTS bench_head (tenant_id text PRIMARY KEY, position bigint NOT NULL,"
    " hash text NOT NULL, tree_size bigint NOT NULL, tree_border bytea[] NOT NULL)"
)


async def extend_cost(system: object, runs: int, size: int = 10, calls: int = 2000) -> list[str]:
    """Server time of the tree work alone: ``calls`` appends' head-row work (lock, read,
    update, commit) with ``size`` leaves each, in one DO block, with and without the tree.
    Before: migration 0012's ``kg_merkle_extend`` (SECURITY DEFINER, reads and writes the
    tenant's frontier row; recreated here under another name, with a frontier table of its
    own). After: ``kg_merkle_grow`` (migration 0016), the frontier read and written with the
    head row.

    Each call commits, as each append does (in one transaction, the 2,000 updates of one row
    would make a chain of row versions that every later read walks). Wall time and the server
    process's CPU time (``/proc``: the embedded server is local), which other jobs on the
    machine disturb less."""
    schema = str(await system.fetchval("SELECT current_schema()"))  # type: ignore[attr-defined]
    m0012 = _migration("0012_merkle_tree.py")
    definition = m0012._extend(schema).split("CREATE FUNCTION kg_merkle_rebuild")[0]  # type: ignore[attr-defined]
    old = definition.replace("kg_merkle_extend(", "bench_extend_0012(", 1).replace(
        "kg_merkle_frontier", "bench_merkle_frontier"
    )
    await system.execute(  # type: ignore[attr-defined]
        "CREATE TABLE IF NOT EXISTS bench_merkle_frontier (tenant_id text PRIMARY KEY, "
        "size bigint NOT NULL, border bytea[] NOT NULL)"
    )
    await system.execute(old)  # type: ignore[attr-defined]
    await system.execute(_HEAD)  # type: ignore[attr-defined]
    plain = {"read": "NULL::bigint, NULL::bytea[]", "update": ""}
    variants = {
        "head row alone": {**plain, "tree": "NULL;"},
        "+ 0012's kg_merkle_extend (frontier row)": {
            **plain,
            "tree": "PERFORM bench_extend_0012('{tenant}', p, h);",
        },
        "+ 0016's kg_merkle_grow (frontier in the head row)": {
            "read": "tree_size, tree_border",
            "tree": "b := kg_merkle_grow('{tenant}', s, b, p, h);",
            "update": ", tree_size = s + {size}, tree_border = b",
        },
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    async with system.acquire() as conn:  # type: ignore[attr-defined]
        pid = await conn.fetchval("SELECT pg_backend_pid()")
        # The commit's wait for the disk is the append's whatever the tree; here it would
        # drown what is measured.
        await conn.execute("SET synchronous_commit = off")
        for run in range(runs):
            for k, (name, parts) in enumerate(variants.items()):
                tenant = f"t{k}-{run}"
                filled = {key: v.format(tenant=tenant, size=size) for key, v in parts.items()}
                sql = _EXTEND_LOOP.format(last=calls - 1, size=size, tenant=tenant, **filled)
                started, cpu_started = time.perf_counter(), _cpu_seconds(pid)
                await conn.execute(sql)
                times[name].append((time.perf_counter() - started) * 1000 / calls)
                cpu[name].append((_cpu_seconds(pid) - cpu_started) * 1000 / calls)
    base, cpu_base = median(times["head row alone"]), median(cpu["head row alone"])
    return [
        f"| {name}, {size} leaves, ms per call | {median(t):.4f} | {median(t) - base:.4f} | "
        f"{median(cpu[name]) - cpu_base:.4f} | {', '.join(f'{x:.4f}' for x in t)} |"
        for name, t in times.items()
    ]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a local process (0 where /proc is not there)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def bulk_log(system: object, tenant: str, n: int) -> float:
    """``n`` events of ``tenant`` by COPY, with real chain hashes, then the tree by rebuild."""
    head = 0  # a new tenant: its own positions start at 1
    recorded = datetime.now(UTC)
    payload = '{"name":"Bulk","node_id":"document:bulk","node_type":"Document"}'
    chunk = 100_000
    prev = GENESIS_HASH
    started = time.perf_counter()
    for start in range(0, n, chunk):
        buf = io.StringIO()
        for k in range(start, min(n, start + chunk)):
            position = head + k + 1
            event_id = str(uuid.UUID(int=k + 1))
            canonical = canonical_event(
                position=position, event_id=event_id, tenant_id=tenant, project_id="p",
                stream_id=f"bulk-{k // 1000}", stream_version=k % 1000 + 1,
                event_type="NodeAsserted", schema_version=1, payload_json=payload,
                metadata_json="{}", recorded_at=recorded, idempotency_key=None,
            )  # fmt: skip
            digest = chain_hash(prev, canonical)
            buf.write(
                f"{position}\t{event_id}\t{tenant}\tp\tbulk-{k // 1000}\t{k % 1000 + 1}\t"
                f"NodeAsserted\t1\t{payload}\t{{}}\t{recorded.isoformat()}\t\\N\t{prev}\t"
                f"{digest}\n"
            )
            prev = digest
        buf.seek(0)
        await system.copy_to_table(  # type: ignore[attr-defined]
            "kg_events",
            source=io.BytesIO(buf.getvalue().encode()),
            columns=["position", "event_id", "tenant_id", "project_id", "stream_id",
                     "stream_version", "event_type", "schema_version", "payload", "metadata",
                     "recorded_at", "idempotency_key", "prev_hash", "hash"],
        )  # fmt: skip
    await system.execute(  # type: ignore[attr-defined]
        "INSERT INTO kg_chain_heads (tenant_id, position, hash) VALUES ($1, $2, $3)",
        tenant,
        head + n,
        prev,
    )
    copied = time.perf_counter() - started
    started = time.perf_counter()
    await system.execute("SELECT kg_merkle_rebuild($1)", tenant)  # type: ignore[attr-defined]
    await system.execute("VACUUM ANALYZE kg_merkle_nodes")  # type: ignore[attr-defined]
    built = time.perf_counter() - started
    print(f"bulk log: {n:,} events copied in {copied:.0f} s, tree built in {built:.0f} s")
    return built


async def proofs(app: object, tenant: str, n: int, samples: int) -> list[str]:
    import random

    rng = random.Random(16)
    inclusion_ms: list[float] = []
    sizes: list[int] = []
    consistency_ms: list[float] = []
    async with tenant_transaction(app, tenant) as conn:  # type: ignore[arg-type]
        head = await tree.current_head(conn, tenant)
        assert head.size == n
        for _ in range(samples):
            index = rng.randrange(n)
            t0 = time.perf_counter()
            block = await tree.block_leaves(conn, tenant, index // tree.BLOCK)
            leaf = block[index % tree.BLOCK]
            proof = await tree.inclusion_proof(conn, tenant, index, n)
            verify_inclusion(index, n, leaf.hash, proof, head.root)
            inclusion_ms.append((time.perf_counter() - t0) * 1000)
            sizes.append(len(json.dumps({"leaf_index": index, "tree_size": n,
                                         "path": [p.hex() for p in proof]})))  # fmt: skip
            old = rng.randrange(1, n)
            t0 = time.perf_counter()
            old_head = await tree.head_at(conn, tenant, old)  # stands for a held checkpoint
            cproof = await tree.consistency_proof(conn, tenant, old, n)
            verify_consistency(old, n, old_head.root, head.root, cproof)
            consistency_ms.append((time.perf_counter() - t0) * 1000)
    return [
        f"| inclusion proof at {n:,} leaves: fetch + verify, ms | {median(inclusion_ms):.2f} "
        f"| {percentile(inclusion_ms, 95):.2f} | {max(inclusion_ms):.2f} |",
        f"| inclusion proof, JSON bytes (index, size, hex path of {len(proof)} hashes) "
        f"| {median(sizes):,.0f} | {percentile(sizes, 95):,.0f} | {max(sizes):,} |",
        f"| consistency: old root + proof fetch + verify, ms | {median(consistency_ms):.2f} "
        f"| {percentile(consistency_ms, 95):.2f} | {max(consistency_ms):.2f} |",
    ]


async def main(runs: int, events: int, samples: int, server: bool, extend: bool) -> None:
    url = fresh_database()
    app = await create_pool(url, app_role=True, max_size=10)
    system = await create_pool(url, app_role=False, max_size=10)
    store = EventStore(app)
    if extend:
        lines = [
            "| server time | median | minus the head row alone | CPU, same | runs |",
            "| --- | ---: | ---: | ---: | --- |",
        ]
        lines += await extend_cost(system, runs)
    elif server:
        lines = await server_throughput(system, runs)
    else:
        lines = await throughput(store, system, runs) if runs else []
    print("\n".join(lines), flush=True)
    print(f"Machine: {machine()}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; median of {runs} runs\n")
    print("\n".join(lines))
    if not events:
        return
    built = await bulk_log(system, "big", events)
    proof_lines = await proofs(app, "big", events, samples)
    await app.close()
    await system.close()
    print(f"\nTree of {events:,} events built from the log (kg_merkle_rebuild): {built:.0f} s\n")
    print(f"| at {events:,} events ({samples} random samples) | median | p95 | max |")
    print("| --- | ---: | ---: | ---: |")
    print("\n".join(proof_lines))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument(
        "--server-only", action="store_true", help="time the append function alone (SQL)"
    )
    parser.add_argument(
        "--extend-only", action="store_true", help="time the tree's extension alone (a DO loop)"
    )
    a = parser.parse_args()
    asyncio.run(main(a.runs, a.events, a.samples, a.server_only, a.extend_only))
