"""``panel serve --setup`` script: build the main pages once before the server takes requests,
and let at most a few pages load at once (:mod:`apps.ui.server.page_gate`), each built off the
event loop (:func:`build_pages_off_loop`); check ``--basic-auth`` logins with
:mod:`apps.ui.server.logins`; send no server path in any page (:func:`hide_server_paths`);
discard a session soon after its reader left and return closed sessions' memory
(:mod:`apps.ui.server.session_memory`); one pool of dask threads for every reading thread
(:mod:`apps.ui.server.dask_threads`); with ``--num-procs``, each forked process ends with the
process that forked it (:mod:`apps.ui.server.end_with_parent`).

``inference-lab serve`` passes it; with plain Panel:
``panel serve apps/*.py --setup apps/ui/views/serve_setup.py``.
"""

import logging

import panel as pn

from apps.ui.panel_compat import (
    LoginChecks,
    WaitingLine,
    answer_long_requests,
    build_pages_off_loop,
    check_logins,
    discard_left_sessions,
    gate_page_requests,
    hide_server_paths,
    quiet_anonymous_autoload,
)
from apps.ui.server.dask_threads import share_dask_threads
from apps.ui.server.end_with_parent import end_with_parent
from apps.ui.server.logins import LOGINS_ENV, LoginThrottle, login_log_line, logins_for
from apps.ui.server.page_gate import PageGate, configured_limit, default_limit
from apps.ui.server.session_memory import LEFT_SESSION_LINGER_S, session_closed
from apps.ui.server.waiting_page import TURN_COOKIE, TURN_HEADER, YOUR_TURN, waiting_page
from apps.ui.server.warmup import warm_up
from apps.ui.views.app import build_page

log = logging.getLogger("bokeh")
end_with_parent()  # a process forked by --num-procs: stopped with the server's first process
answer_long_requests()
check_logins(LoginChecks(logins_for, LOGINS_ENV, LoginThrottle(), login_log_line))
quiet_anonymous_autoload()
build_pages_off_loop()  # the event loop keeps answering while pages are built
share_dask_threads()  # one pool of dask threads, whichever thread reads
discard_left_sessions(LEFT_SESSION_LINGER_S)  # a reader's document goes when the reader does
pn.state.on_session_destroyed(session_closed)  # closed sessions' memory back after a burst
log.info("Inference Lab: pages prepared in %.1f s.", warm_up(build_page))
hide_server_paths()  # after the warm-up: every page's models are defined by now
try:
    pages_at_once = configured_limit()
except ValueError as error:  # plain `panel serve` with a bad value; inference-lab serve refuses it
    pages_at_once = default_limit()
    log.error("Inference Lab: %s Using the default, %d.", error, pages_at_once)
if pages_at_once:
    gate_page_requests(PageGate(pages_at_once),
                       WaitingLine(waiting_page, TURN_HEADER, TURN_COOKIE, YOUR_TURN))
    log.info("Inference Lab: pages load %d at a time; later readers wait their turn.",
             pages_at_once)
