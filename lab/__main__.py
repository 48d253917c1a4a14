"""``python -m lab`` runs the ``inference-lab`` command line (kept for old scripts).

An entry script, never imported by the lab's modules: the command line lives above the lab
(:mod:`cli`), so this one file is the documented exception to the import rule.
"""

import runpy

if __name__ == "__main__":
    runpy.run_module("cli", run_name="__main__", alter_sys=True)
