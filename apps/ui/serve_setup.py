"""``panel serve --setup`` script: build the main pages once before the server takes requests.

``inference-lab serve`` passes it; with plain Panel:
``panel serve apps/*.py --setup apps/ui/serve_setup.py``.
"""

import logging

from apps.ui.app import build_page
from apps.ui.warmup import warm_up

logging.getLogger("bokeh").info("Inference Lab: pages prepared in %.1f s.",
                                warm_up(build_page))
