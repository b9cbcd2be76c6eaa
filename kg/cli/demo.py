"""``kg demo``: the main job of the quick start on the embedded database."""

from __future__ import annotations

from kg.cli import db
from kg.cli.common import console, run
from kg.demo import seed_demo
from kg.runtime import open_runtime


def demo() -> None:
    """Initialise, append the demo events (once: reruns are idempotent), verify, print status."""
    db.init()

    async def go() -> None:
        async with open_runtime() as rt:
            result = await seed_demo(rt)
            verb = "already present" if result.duplicate else "appended"
            console.print(
                f"demo events {verb}: positions {result.first_position}..{result.last_position}"
            )
            from kg.audit.verify import verify_tenant

            console.print(f"audit verify: {await verify_tenant(rt.app_pool, rt.scope.tenant_id)}")

    run(go)
    db.status()
