"""The memory model on the event log: writes acknowledged with their position, concurrent
writers losing nothing, deletes as retirements, reads ranked and cut to a budget, policies."""

from __future__ import annotations

import asyncio

import pytest

from kg.audit.verify import verify_tenant
from kg.errors import NotFoundError
from kg.events import EventMetadata, PolicyDefined
from kg.memory import read, write
from kg.memory.model import Entity, ObservationsToAdd, ObservationsToDelete, Relation
from kg.policies.model import PolicyRule
from kg.projections.digest import table_digest
from kg.runtime import Runtime

META = EventMetadata(actor="test")


def entity(name: str, kind: str = "person", *observations: str) -> Entity:
    return Entity(name=name, entity_type=kind, observations=list(observations))


def relation(a: str, kind: str, b: str) -> Relation:
    return Relation.model_validate({"from": a, "to": b, "relationType": kind})


async def test_writes_are_acknowledged_and_read_back_in_the_reference_shape(
    runtime: Runtime,
) -> None:
    created = await write.create_entities(
        runtime,
        [entity("Alice", "person", "likes tea"), entity("Acme", "organization", "sells anvils")],
        META,
    )
    assert [e.name for e in created.value] == ["Alice", "Acme"]
    assert created.position is not None and created.events == 2
    again = await write.create_entities(runtime, [entity("Alice", "robot")], META)
    assert again.value == [] and again.position is None  # an existing name is left alone

    linked = await write.create_relations(runtime, [relation("Alice", "works_at", "Acme")], META)
    assert linked.position is not None and linked.position > created.position
    added = await write.add_observations(
        runtime, [ObservationsToAdd(entity_name="Alice", contents=["likes tea", "runs"])], META
    )
    assert added.value[0].added_observations == ["runs"]

    graph = await read.open_nodes(runtime, ["Alice"])
    assert graph.to_dict()["entities"] == [
        {"name": "Alice", "entityType": "person", "observations": ["likes tea", "runs"]}
    ]
    assert graph.relations == [{"from": "Alice", "to": "Acme", "relationType": "works_at"}]

    with pytest.raises(NotFoundError, match="Nobody"):
        await write.add_observations(
            runtime, [ObservationsToAdd(entity_name="Nobody", contents=["x"])], META
        )
    with pytest.raises(NotFoundError, match="Ghost"):
        await write.create_relations(runtime, [relation("Alice", "knows", "Ghost")], META)

    await write.delete_observations(
        runtime, [ObservationsToDelete(entity_name="Alice", observations=["runs"])], META
    )
    deleted = await write.delete_entities(runtime, ["Acme", "Unknown"], META)
    assert deleted.value == ["Acme"]
    after = await read.read_graph(runtime)
    assert after.entities == [
        {"name": "Alice", "entityType": "person", "observations": ["likes tea"]}
    ]
    assert after.relations == []  # the relation went with its entity
    kinds = await runtime.system_pool.fetch(
        "SELECT event_type FROM kg_events WHERE stream_id = 'memory:Acme' ORDER BY position"
    )
    assert [k[0] for k in kinds] == ["MemoryEntityCreated", "MemoryEntityDeleted"]


async def test_concurrent_writers_to_one_entity_lose_nothing(runtime: Runtime) -> None:
    await write.create_entities(runtime, [entity("Shared", "note")], META)

    async def writer(i: int) -> None:
        for j in range(5):
            await write.add_observations(
                runtime, [ObservationsToAdd(entity_name="Shared", contents=[f"w{i}-{j}"])], META
            )

    await asyncio.gather(*(writer(i) for i in range(6)))
    graph = await read.open_nodes(runtime, ["Shared"])
    assert sorted(graph.entities[0]["observations"]) == sorted(
        f"w{i}-{j}" for i in range(6) for j in range(5)
    )
    assert (await verify_tenant(runtime.system_pool, runtime.scope.tenant_id)).ok


async def test_reads_are_ranked_and_cut_to_the_budget_saying_what_was_cut(
    runtime: Runtime,
) -> None:
    people = [entity(f"Person {i:03}", "person", f"fact {i} " * 20) for i in range(60)]
    await write.create_entities(runtime, [entity("Hub", "place"), *people], META)
    await write.create_relations(
        runtime, [relation(f"Person {i:03}", "lives_in", "Hub") for i in range(10)], META
    )
    graph = await read.read_graph(runtime, token_budget=1000)
    assert graph.entities[0]["name"] == "Hub"  # the most connected first
    assert graph.token_estimate <= 1000
    assert graph.cut.entities == 61 - len(graph.entities) > 0
    assert "left out" in graph.summary()
    kept = {e["name"] for e in graph.entities}
    assert all({r["from"], r["to"]} <= kept for r in graph.relations)

    # Read a page at a time, it keeps the same entities and counts the rest the same way.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(read, "PAGE", 7)
        paged = await read.read_graph(runtime, token_budget=1000)
    assert paged.entities == graph.entities and paged.relations == graph.relations
    assert paged.cut == graph.cut
    assert graph.cut.relations == 10 - len(graph.relations)

    found = await read.search_nodes(runtime, "PERSON 007")
    assert found.entities[0]["name"] == "Person 007"  # the whole name outranks the rest
    assert {"from": "Person 007", "to": "Hub", "relationType": "lives_in"} in found.relations
    every = await read.search_nodes(runtime, "person", token_budget=500)
    assert every.cut.entities > 0 and len(every.entities) + every.cut.entities == 60
    with pytest.MonkeyPatch.context() as patch:  # fewer candidates ranked: counted all the same
        patch.setattr(read, "SEARCH_CANDIDATES", 20)
        fewer = await read.search_nodes(runtime, "person", token_budget=500)
    assert fewer.entities == every.entities and fewer.cut.entities == every.cut.entities
    words = await read.search_nodes(runtime, "fact person")  # no substring: full text finds it
    assert words.entities


async def test_a_denied_entity_is_neither_listed_nor_named_by_a_relation(
    runtime: Runtime,
) -> None:
    await write.create_entities(
        runtime, [entity("Alice", "person"), entity("Vault", "secret", "the code is 1234")], META
    )
    await write.create_relations(runtime, [relation("Alice", "guards", "Vault")], META)
    await runtime.store.append(
        runtime.scope,
        "policies",
        [
            PolicyDefined(
                policy_id="policy:secrets",
                name="No secrets",
                rule=PolicyRule(effect="deny", labels=("memory:secret",)),
            )
        ],
    )
    for graph in (
        await read.read_graph(runtime),
        await read.search_nodes(runtime, "a"),
        await read.open_nodes(runtime, ["Alice", "Vault"]),
    ):
        text = str(graph.to_dict())
        assert "Vault" not in text and "1234" not in text
        assert graph.excluded_by_policy == 1
    # Writing to it is as to a missing entity: refused, without saying it exists.
    with pytest.raises(NotFoundError):
        await write.add_observations(
            runtime, [ObservationsToAdd(entity_name="Vault", contents=["x"])], META
        )
    # Creating it again creates nothing (and changes nothing), as for any existing name.
    assert (await write.create_entities(runtime, [entity("Vault", "secret")], META)).value == []
    assert (await read.open_nodes(runtime, ["Alice"])).entities[0]["name"] == "Alice"


async def test_the_memory_graph_is_rebuilt_from_the_log_to_the_same_rows(
    runtime: Runtime,
) -> None:
    """Invariant 1 for the memory events: drop the projections, replay, same rows."""
    await write.create_entities(
        runtime, [entity("Alice", "person", "a"), entity("Acme", "org"), entity("Bob")], META
    )
    await write.create_relations(
        runtime, [relation("Alice", "works at", "Acme"), relation("Bob", "knows", "Alice")], META
    )
    await write.add_observations(
        runtime, [ObservationsToAdd(entity_name="Alice", contents=["b", "c"])], META
    )
    await write.delete_observations(
        runtime, [ObservationsToDelete(entity_name="Alice", observations=["a"])], META
    )
    await write.delete_relations(runtime, [relation("Bob", "knows", "Alice")], META)
    await write.delete_entities(runtime, ["Acme"], META)
    await runtime.catch_up()
    tables = ("kg_nodes", "kg_edges")
    before = [await table_digest(runtime.system_pool, t) for t in tables]
    assert (await read.read_graph(runtime)).entities[0]["observations"] == ["b", "c"]

    await runtime.runner.rebuild()

    assert [await table_digest(runtime.system_pool, t) for t in tables] == before
