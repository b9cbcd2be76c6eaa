"""The local host: kg's own processes on this machine.

The embedded PostgreSQL's lifecycle (:mod:`kg.host.embedded`), the handles of the live ``kg``
processes that hold it (:mod:`kg.host.handles`), its idle watchdog (:mod:`kg.host.idle`),
``kg server status|stop`` (:mod:`kg.host.server_control`) and the resident command host
(:mod:`kg.host.resident`, :mod:`kg.host.resident_host`). It sits above the database layer,
which only connects to a URL it is given, and below the entry points that start it.
"""
