"""The read path: one owner of the read model (:class:`~kg.read.reader.Reader`, from
``rt.reader()``), policy-checked graph access (:mod:`kg.read.governed`), record queries
(:mod:`kg.read.records`) and the typed results shared by the CLI and the MCP tools
(:mod:`kg.read.models`)."""
