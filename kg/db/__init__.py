"""Database access on a URL it is given: pools, tenancy, schema revision and migrations.

Which database to use, and starting the embedded one, is the local host's business
(:mod:`kg.host.database`): nothing here starts or watches a process.
"""
