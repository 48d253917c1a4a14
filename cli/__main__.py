"""``python -m cli`` (and ``python -m lab``) runs the ``inference-lab`` command line."""

from cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
