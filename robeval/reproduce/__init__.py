"""One command per paper table: the tables' registry, their layouts, the runner (robeval.api.reproduce)."""

from .run import Reproduction
from .tables import PaperTable, Row, get_table, list_tables, register_table

__all__ = ["PaperTable", "Reproduction", "Row", "get_table", "list_tables", "register_table"]
