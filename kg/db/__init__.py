"""Database access: URL resolution, the embedded server, pools and migrations."""
