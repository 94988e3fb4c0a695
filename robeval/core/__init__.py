"""The ground floor every layer of robeval may import, and which imports none of them (its modules:
docs/layout.md)."""
