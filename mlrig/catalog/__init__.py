"""Catalogs: the models and accelerators mlrig knows, each figure with its source."""
