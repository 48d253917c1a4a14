"""One calculation from checked inputs: JSON-ready records in SI units."""
