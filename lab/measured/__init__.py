"""Experiment 9: measured kernel times against the lab's floors (loader, floors, calc, derivation,
experiment class, experiment 1 overlay). The shipped data is in ``data/`` (Apache-2.0, see NOTICE)."""
