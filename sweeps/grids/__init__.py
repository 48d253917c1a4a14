"""Each experiment's grid block: its spec section's schema and its block function."""
