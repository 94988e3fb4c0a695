"""Everything that turns per-example records into tables and files."""
