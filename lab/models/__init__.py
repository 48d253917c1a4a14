"""The formulas, vectorised over NumPy arrays (one model per module)."""
