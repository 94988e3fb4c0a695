"""Attention layers that replace timm's, one registration per kind (kinds.py)."""
