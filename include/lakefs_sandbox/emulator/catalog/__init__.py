"""The catalog's rooms, which ``core.Catalog`` assembles (``core``'s docstring says which does what)."""
