"""The MCP server for kg: ``server.py`` builds it, ``tools.py`` holds the tools,
``transports.py`` serves them over stdio or streamable HTTP, ``cli.py`` is ``kg mcp``."""
