"""Inference Lab in the browser: ``panel serve apps/*.py`` (or ``inference-lab serve``).

This file is the only app script: ``panel serve apps/*.py`` therefore serves a single app and
Panel redirects ``/`` to it, the landing page. Other pages are ``?view=<slug>``.
"""

import panel as pn

from apps.ui.views.app import build_page

pn.extension(throttled=True, notifications=False)

build_page().servable()
