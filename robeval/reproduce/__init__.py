"""One command per paper table: the tables' registry and registrations (one module per paper), their
layouts, the runner (robeval.api.reproduce)."""

from . import elliptical, hosseini  # noqa: F401  (the registrations)
from .render import Reproduction
from .tables import TABLES, Column, PaperTable, Row, list_tables, register_table

__all__ = ["TABLES", "Column", "PaperTable", "Reproduction", "Row", "list_tables", "register_table"]
