"""The local host: kg's own processes on this machine.

Which database a command uses (:mod:`kg.host.database`: ``KG_DATABASE_URL``, else the
project's embedded PostgreSQL, started), the embedded server's lifecycle
(:mod:`kg.host.embedded`, :mod:`kg.host.postmaster`), the handles of the live ``kg``
processes that hold it (:mod:`kg.host.handles`), its idle watchdog (:mod:`kg.host.idle`),
``kg server status|stop`` (:mod:`kg.host.server_control`) and the resident command host
(:mod:`kg.host.resident`, :mod:`kg.host.resident_host`). It sits above the database layer,
which only connects to a URL it is given, and below the entry points that start it: the
watchdog's process is :mod:`kg.cli.watchdog`, which hands the command host what it runs.
"""
