"""The sentence said when a reader's own rows cannot all be refitted (docs/model.md §11).

A row's prediction uses coefficients fitted on the other (isl, osl) workloads of its engine ×
GPU × mode (leave one workload out), so a group needs runs of at least two workloads; the rows
of a group with one keep their floors and no prediction. No Panel here.
"""

from __future__ import annotations

from lab.units import fmt_count


def unfitted_sentence(modelled: int, predicted: int, never_fitted_on: int = 0) -> str:
    """One sentence when some of ``modelled`` rows have no out-of-sample prediction
    (``predicted`` rows have one); ``""`` when every modelled row has one or none is modelled.
    ``never_fitted_on``: modelled rows no fit may use (measured below a TPOT floor whose batch
    they state: impossible as labelled). When every modelled row is one, that is the reason
    (the sentence named the workloads, which were not at fault)."""
    missing = modelled - predicted
    if modelled <= 0 or missing <= 0:
        return ""
    if modelled == 1:
        which = "Your one modelled row cannot be refitted"
    elif predicted == 0:
        which = f"None of your {modelled:,} modelled rows can be refitted"
    else:
        which = f"{missing:,} of your {modelled:,} modelled rows cannot be refitted"
    if never_fitted_on >= modelled:
        every = "it is" if modelled == 1 else "every one is"
        return (f"{which}: {every} measured below its TPOT floor, impossible as labelled (a "
                "smaller batch or another tp than the row states), and no fit uses such a row; "
                f"{'it shows its floors' if modelled == 1 else 'those rows show their floors'} "
                "only.")
    whose = "its" if never_fitted_on == 1 else "their"
    below = (f" ({fmt_count(never_fitted_on, 'row')} measured below {whose} TPOT floor, which "
             "no fit uses)") if never_fitted_on else ""
    return (f"{which}: the coefficients of a row's engine × GPU × mode are "
            "fitted on its other (isl, osl) workloads, so each needs runs of at least two "
            f"workloads{below}; those rows show their floors only.")
