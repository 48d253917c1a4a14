"""The sentence said when a reader's own rows cannot all be refitted (docs/model.md §11).

A row's prediction uses coefficients fitted on the other (isl, osl) workloads of its engine ×
GPU × mode (leave one workload out), so a group needs runs of at least two workloads; the rows
of a group with one keep their floors and no prediction. No Panel here.
"""

from __future__ import annotations


def unfitted_sentence(modelled: int, predicted: int) -> str:
    """One sentence when some of ``modelled`` rows have no out-of-sample prediction
    (``predicted`` rows have one); ``""`` when every modelled row has one or none is modelled."""
    missing = modelled - predicted
    if modelled <= 0 or missing <= 0:
        return ""
    if modelled == 1:
        which = "Your one modelled row cannot be refitted"
    elif predicted == 0:
        which = f"None of your {modelled:,} modelled rows can be refitted"
    else:
        which = f"{missing:,} of your {modelled:,} modelled rows cannot be refitted"
    return (f"{which}: the coefficients of a row's engine × GPU × mode are "
            "fitted on its other (isl, osl) workloads, so each needs runs of at least two "
            "workloads; those rows show their floors only.")
