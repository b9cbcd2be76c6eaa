"""What the parsers make of a source file, as plain data (nodes, edges, problems), and the
YAML front matter reader: shared by ingestion, the directives and the policy files, below
all three."""
