"""The ``inference-lab`` command line."""
