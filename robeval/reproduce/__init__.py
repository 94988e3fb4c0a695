"""One command per paper table: the tables' registry and registrations (one module per paper), their
layouts, the runner (robeval.api.reproduce)."""

from . import elliptical, hosseini  # noqa: F401  (the registrations)
from .request import Reproduction
from .tables import Column, PaperTable, Row, get_table, list_tables, register_table

__all__ = ["Column", "PaperTable", "Reproduction", "Row", "get_table", "list_tables", "register_table"]
