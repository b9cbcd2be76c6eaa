"""A local Citus cluster (coordinator and workers) for tests, CI and a developer's own trials.

Process management lives here, outside :mod:`kg.db` (which only connects to URLs it is given):
the test fixture (``tests/citus``) and ``scripts/citus-cluster`` start and stop the nodes, and
``kg db distribute`` then runs against the coordinator's URL like any other command.
"""
