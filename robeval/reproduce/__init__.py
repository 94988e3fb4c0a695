"""One command per paper table: the tables' registry, the runs that fill them, their layouts."""

from .run import Reproduction, reproduce
from .tables import PaperTable, Row, get_table, list_tables, register_table

__all__ = ["PaperTable", "Reproduction", "Row", "get_table", "list_tables", "register_table", "reproduce"]
