"""``python -m lab`` runs the ``inference-lab`` command line."""

from lab.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
