"""The test suite (a package, so tests/sweeps is tests.sweeps, never a second ``sweeps``)."""
