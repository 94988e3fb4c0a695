"""The fast protocol, whole (docs/protocols.md, section fast; its modules: docs/layout.md).

Importing this package imports none of its modules (the read commands import :mod:`.summary` alone,
without torch).
"""
