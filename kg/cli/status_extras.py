"""Status lines contributed by the read side (projections, embeddings)."""

from __future__ import annotations

from kg.cli.common import console, err_console
from kg.embeddings.cache import index_model
from kg.projections.embedding_backlog import count_waiting
from kg.runtime import Runtime


async def print_extras(rt: Runtime) -> None:
    for s in await rt.runner.status(rt.scope.tenant_id):
        console.print(f"projection:    {s.name} at {s.position} (lag {s.lag})")
    embedder = rt.embedder
    async with rt.system_pool.acquire() as conn:
        indexed = await index_model(conn)
        waiting = await count_waiting(conn, rt.scope)
    console.print(f"embedder:      {embedder.model_id} (index holds {indexed or 'nothing yet'})")
    if waiting:
        console.print(
            f"embeddings:    {waiting} node(s) wait for an embedding (an ingest is still "
            "embedding them or was interrupted, or the embedder was unavailable); the running "
            "or next `kg ingest` or `kg sync` embeds them"
        )
        from kg.host.background_embed import running_embedder

        found = running_embedder(rt.settings.state_dir)
        if found is not None:
            console.print(
                f"               a background embedding runs (pid {found.pid}, log {found.log})",
                markup=False,
            )
    if embedder.is_fallback:
        err_console.print(
            "[bold yellow]WARNING:[/] embeddings come from the hashing FALLBACK (lexical, not "
            "semantic). Install the semantic extra (`./scripts/setup`) or set KG_EMBEDDER."
        )
