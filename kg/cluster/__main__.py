"""``python -m kg.cluster start|stop|add-worker|status``: ``scripts/citus-cluster``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kg.cluster import nodes
from kg.errors import KgError

DEFAULT_ROOT = Path(".kg") / "citus"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/citus-cluster",
        description="A local Citus cluster (coordinator and workers) from the embedded "
        "PostgreSQL's binaries, for trying kg's scale-out by hand.",
    )
    parser.add_argument("action", choices=["start", "stop", "add-worker", "status"])
    parser.add_argument(
        "--root", type=Path, default=DEFAULT_ROOT, help=f"data folder (default {DEFAULT_ROOT})"
    )
    parser.add_argument("--workers", type=int, default=2, help="workers to start (start)")
    parser.add_argument("--database", default="kg", help="kg database to create (start)")
    parser.add_argument("--delete", action="store_true", help="remove the data folder (stop)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    try:
        if args.action == "start":
            cluster = nodes.start_cluster(root, workers=args.workers)
            url = nodes.create_database(cluster, args.database)
            print(f"coordinator and {len(cluster.workers)} worker(s) running under {root}")
            print(f"export KG_DATABASE_URL={url}")
            print("then: kg db upgrade && kg db distribute")
        elif args.action == "stop":
            nodes.stop_cluster(nodes.Cluster.load(root), delete=args.delete)
            print(f"stopped the cluster under {root}" + (" and removed it" if args.delete else ""))
        elif args.action == "add-worker":
            cluster = nodes.Cluster.load(root)
            node = nodes.add_worker(cluster)
            print(f"worker {node.name} on port {node.port} added to {', '.join(cluster.databases)}")
            print("move shards to it: SELECT citus_rebalance_start(); on the coordinator")
        else:
            cluster = nodes.Cluster.load(root)
            for node in cluster.nodes:
                running = (node.pgdata / "postmaster.pid").exists()
                print(f"{node.name:12} port {node.port:5}  {'running' if running else 'stopped'}")
            for database in cluster.databases:
                print(f"KG_DATABASE_URL={cluster.url(database)}")
    except KgError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
