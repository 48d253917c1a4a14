"""Whole pages: the generic experiment page and its per-experiment descriptions, the pages of
experiments 9 and 11, the derivation page and the grid explorer."""
