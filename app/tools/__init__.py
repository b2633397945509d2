"""Writing tool cards, the live per-namespace index, and look-alike tools."""
