"""Panel components of the Inference Lab: thin views over the ``lab`` experiment classes.

Everything here is layout and wiring. Every number shown comes from :mod:`lab` (the
experiments' cards, steps, explanations and chart data, the catalog and the precomputed grid).
"""
