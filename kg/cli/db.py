"""``kg init``, ``kg db upgrade|downgrade`` and ``kg status``."""

from __future__ import annotations

import typer

from kg.cli.common import console, err_console, run
from kg.config import Settings

db_app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)


def _migrate(revision: str, down: bool = False) -> str:
    settings = Settings.from_env()

    async def go() -> str:
        from kg.db.connect import describe_database
        from kg.db.revision import head_revision, is_at_head
        from kg.host.database import database_url

        url = database_url(settings)
        if not down and revision in ("head", head_revision()) and await is_at_head(url):
            return describe_database(settings, url)  # nothing to run: no Alembic
        from kg.db import migrate  # Alembic costs ~0.5 s to import: only where it is used

        if down:
            migrate.downgrade(url, revision)
        else:
            migrate.upgrade(url, revision)
        return describe_database(settings, url)

    return run(go)


@db_app.command("upgrade")
def upgrade(revision: str = typer.Argument("head", help="Target revision.")) -> None:
    """Bring the database schema to REVISION (default: head)."""
    where = _migrate(revision)
    console.print(f"schema at {revision} on {where}")


@db_app.command("downgrade")
def downgrade(
    revision: str = typer.Argument("base", help="Target revision."),
    yes: bool = typer.Option(
        False, "--yes", help="Confirm: downgrading to base drops every table."
    ),
) -> None:
    """Take the schema back to REVISION (default: base, which drops all kg tables)."""
    if not yes:
        console.print("refusing to downgrade without --yes: it drops tables and their data")
        raise typer.Exit(2)
    where = _migrate(revision, down=True)
    console.print(f"schema at {revision} on {where}")


@db_app.command("distribute")
def distribute_command() -> None:
    """Shard the database on a Citus coordinator (KG_DATABASE_URL), after `kg db upgrade`.

    Tenant tables become distributed by tenant_id, co-located with the log; shared catalogues
    become reference tables; the append, Merkle and erasure functions run on the tenant's
    worker. Idempotent: a second run changes nothing and says so.
    """
    settings = Settings.from_env()
    if not settings.database_url:
        err_console.print(
            "[bold red]error:[/] kg db distribute needs a Citus coordinator: set "
            "KG_DATABASE_URL to its URL (the embedded database is a single node)"
        )
        raise typer.Exit(2)
    url = settings.database_url

    async def go() -> DistributeReport:
        from kg.db.distribute import distribute

        return distribute(url)

    from kg.db.distribute import DistributeReport

    report = run(go)
    for name in report.distributed:
        console.print(f"distributed {name} by tenant_id (co-located with kg_events)")
    for name in report.referenced:
        console.print(f"reference table {name} (a copy on every node)")
    for name in dict.fromkeys(report.delegated):
        console.print(f"function {name} runs on the tenant's worker")
    for setting in report.settings:
        console.print(f"database setting {setting}")
    verb = "distributed" if report.changed else "already distributed, nothing to do"
    console.print(f"{verb}: {report.workers} worker(s), {report.already} step(s) done before")


def init() -> None:
    """Create the project's database (embedded unless KG_DATABASE_URL is set) and migrate it."""
    from kg.config import ensure_state_dir
    from kg.db import revision

    state = ensure_state_dir(Settings.from_env().state_dir)
    where = _migrate("head")
    console.print(f"initialised: {where}, schema at {revision.head_revision()}")
    console.print(
        f"kg's local state in {state} is ignored by git ({state / '.gitignore'}); "
        "schema.yaml and policies/ there stay versioned"
    )


def status() -> None:
    """Which database is in use, its schema revision, the event count and the last position."""
    from kg.db import revision
    from kg.db.connect import APP_PASSWORD_ENV, APP_ROLE, SET_ROLE_FALLBACK
    from kg.host.database import open_runtime

    async def go() -> None:
        async with open_runtime() as rt:
            scope = rt.scope
            # This project's figures only: other tenants' activity is not this user's business.
            mine = await rt.store.count(scope)
            last = await rt.store.last_position(scope)
            console.print(f"database:      {rt.describe()}")
            console.print(
                f"schema:        {await revision.current_revision(rt.system_pool)} (head)"
            )
            console.print(f"scope:         tenant {scope.tenant_id}, project {scope.project_id}")
            console.print(f"events:        {mine} in this project")
            console.print(f"last position: {last}")
            if SET_ROLE_FALLBACK:
                err_console.print(
                    f"[bold yellow]warning:[/] the application pool could not log in as "
                    f"{APP_ROLE} and uses SET ROLE from the URL's user, which a statement could "
                    f"undo: give {APP_ROLE} a password and set {APP_PASSWORD_ENV}"
                )
            from kg.cli.status_extras import print_extras

            await print_extras(rt)

    run(go)
