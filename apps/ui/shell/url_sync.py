"""The one road from a page's URL to its inputs, and back: :class:`UrlInputs`.

Every page that keeps inputs in its URL goes through here (an architecture test checks that no
other module of ``apps`` reads the query into a ``param`` object or calls Panel's
``Location.sync``). From a URL only the declared set is accepted (:mod:`apps.ui.shell.url_values`:
catalog ids, numbers inside the widgets' bounds, ``true``/``false``); anything else keeps the
value in force and is reported in one sentence. Selectors are made strict on the page's copy,
so no later route can set a path either. Nothing here opens a file.

Panel's own ``Location.sync`` is not used: it parses the whole query with
``panel.util.parse_query``, which raises on a value of more than 4,300 digits (Python's
integer-string limit) and so blanks the page, and it applies a link's values all or nothing.
Here the query is read with :func:`urllib.parse.parse_qsl` only, a value longer than
:data:`MAX_URL_VALUE_CHARS` is refused before anything parses it, and each value is judged on
its own.

An edit rewrites the address in place (:class:`OneHistoryEntry`): Panel's location adds a
browser history entry per change, and Back then changed the address but not the inputs. Back
leaves the page, as after any other edit of a web form.
"""

from __future__ import annotations

import collections
import difflib
import json
import weakref
from collections.abc import Callable, Sequence
from urllib.parse import parse_qsl, urlencode

import panel as pn
import param

from apps.ui.shell.browser_state import CARRIED
from apps.ui.shell.url_values import quoted, strict_selectors, url_problems

MAX_URL_VALUE_CHARS = 256
"""Longest query value a page reads, characters (no input's value is longer; a longer one is
refused unparsed: a 5,000-digit number would exceed Python's integer-string limit)."""

PAGE_KEYS = ("view", "theme", *CARRIED)
"""Query keys any page may carry that its inputs need not hold: the page's name, the theme,
and what a sidebar link carries (:data:`apps.ui.shell.browser_state.CARRIED`; ignored without
a word where the page has no such input, since the lab's own links put them there)."""

MAX_UNKNOWN_NAMED = 3
"""Most unknown query keys one sentence names (the rest are counted)."""

_LAST_WRITTEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Page location → the query any :class:`UrlInputs` of the page last wrote into it. A page's
own write is never judged as a link by its other reader: two readers that know different keys
(each dropping what it does not know) would otherwise rewrite the address in turn forever."""

Report = Callable[[str | None], None]
"""Where a page's one-sentence messages go (``InputMessage.say``)."""


def query_pairs(search: str) -> list[tuple[str, str]]:
    """The ``(key, value)`` pairs of the query ``search`` (``?a=1&b=x``), blanks kept."""
    return parse_qsl(search[1:] if search.startswith("?") else search, keep_blank_values=True)


def screened(search: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The query's pairs without over-long values, and one sentence per value dropped."""
    kept, problems = [], []
    for key, value in query_pairs(search):
        if len(value) > MAX_URL_VALUE_CHARS:
            problems.append(f"The link's {quoted(key)}= value is {len(value):,} characters "
                            f"long (at most {MAX_URL_VALUE_CHARS} are read), so it was ignored.")
        else:
            kept.append((key, value))
    return kept, problems


def unknown_keys_sentence(keys: Sequence[str], names: Sequence[str]) -> str:
    """One sentence for query ``keys`` that are no input of the page (whose inputs are
    ``names``): each quoted, with the input a misspelt one most likely meant."""
    def one(key: str) -> str:
        close = difflib.get_close_matches(key.lower(), names, n=1, cutoff=0.7)
        return f"{quoted(key)}= (did you mean {close[0]}=?)" if close else f"{quoted(key)}="

    shown = [one(k) for k in keys[:MAX_UNKNOWN_NAMED]]
    more = len(keys) - len(shown)
    if more:
        shown.append(f"{more:,} more key{'s' if more > 1 else ''}")
    listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
    are = "is not an input" if len(keys) == 1 else "are not inputs"
    them = "it was" if len(keys) == 1 else "they were"
    return f"The link's {listed} {are} of this page, so {them} ignored."


def as_search(pairs: list[tuple[str, str]]) -> str:
    """``pairs`` as a query string with its ``?`` ('' when empty)."""
    return "?" + urlencode(pairs) if pairs else ""


def url_text(parameter: param.Parameter, value: object) -> str:
    """``value`` of ``parameter`` as the URL shows it (as Panel's URL sync writes it)."""
    shown = parameter.serialize(value)
    return shown if isinstance(shown, str) else json.dumps(shown)


def url_inputs(target: param.Parameterized) -> list[str]:
    """Inputs of an experiment kept in the URL: all but free-text ones (a file path must not
    come from a link)."""
    return [n for n in target.input_names() if not isinstance(target.param[n], param.String)]


def upload_only(experiment: param.Parameterized, names: Sequence[str]) -> list[str]:
    """The experiment's inputs a page keeps out of its URL (``names`` are those it keeps): a
    file only an upload sets (experiment 7's trace, 9's and 11's measurements, 12's model
    config), given to :class:`UrlInputs` as ``unlinkable``."""
    return [n for n in experiment.input_names() if n not in names]


class OneHistoryEntry(pn.custom.JSComponent):
    """An invisible part of every page: the page's own changes of its address (an input edit
    written into the query) replace the browser's history entry instead of adding one, so
    Back never shows an address whose inputs are not on the page. A change of path (another
    page) still adds its entry."""

    _esm = """
    export function render() {
      if (!window.__labOneHistoryEntry) {
        window.__labOneHistoryEntry = true;
        const push = window.history.pushState.bind(window.history);
        const replace = window.history.replaceState.bind(window.history);
        window.history.pushState = (state, title, url) => {
          const next = url == null ? null : new URL(String(url), window.location.href);
          if (next && next.pathname === window.location.pathname) {
            replace(state, title, url);
          } else {
            push(state, title, url);
          }
        };
      }
      const span = document.createElement("span");
      span.style.display = "none";
      return span;
    }
    """


class UrlInputs:
    """Keeps ``names`` of ``target`` in the page's URL query, accepting only what a page may set.

    On construction the link's values are applied (those in ``first`` before the rest, with
    ``after_first()`` called in between: a value may decide what another accepts), the refused
    ones reported through ``report`` in one sentence each, and the URL rewritten to the values
    in force. Selectors among ``names`` refuse any value not listed, whatever sets them, except
    those in ``lenient`` (their list follows another input; the URL's value is still judged
    against the list in force). Later, each input change is written into the URL (other query
    keys kept) and each URL change from the browser is judged the same way. Without a server
    location (a notebook, a unit test without one) nothing is synced. A link naming one of
    ``unlinkable`` (an input a link may not set: a file on the server) is told so in one
    sentence and that key is dropped from the URL, which then shows only what is in force.
    A key that is no input of the page (a misspelt one) is told so in one sentence too, with
    the input it most likely meant, and dropped: beside ``names`` and ``unlinkable`` the page
    knows :data:`PAGE_KEYS` and ``others`` (the keys of the page's other URL reader). With
    ``others`` None this reader judges no key it does not hold (the page's other reader does:
    the grid explorer's dataset, read before the dataset's own inputs exist).

    ``settle()``, called after each link's values are applied, may move what the inputs
    accept one by one but not together (experiment 9: a batch not measured at the link's
    tp); it returns one sentence per move, reported with the refusals. :attr:`applying` is
    True while a link's values are applied and settled (a page's own follow-ups to an input
    change stand aside: ``settle`` does them).
    """

    def __init__(self, target: param.Parameterized, names: Sequence[str], report: Report, *,
                 first: Sequence[str] = (), after_first: Callable[[], None] | None = None,
                 lenient: Sequence[str] = (), unlinkable: Sequence[str] = (),
                 others: Sequence[str] | None = (),
                 settle: Callable[[], list[str]] | None = None):
        self.target, self.names, self.report = target, list(names), report
        self.settle = settle
        self.applying = False
        self.unlinkable = [n for n in unlinkable if n not in self.names]
        self.known = (None if others is None else
                      {*self.names, *self.unlinkable, *PAGE_KEYS, *others})
        self.first = [n for n in first if n in self.names]
        self.after_first = after_first
        strict_selectors(target, [n for n in self.names if n not in lenient])
        self._written: str | None = None
        self._watchers: list = []
        self.location = pn.state.location
        self.problems: list[str] = []
        if self.location is None:
            return
        self.problems = self._apply(self.location.search)
        self._watchers = [target.param.watch(self._to_url, self.names),
                          self.location.param.watch(self._from_url, "search")]
        self._to_url()
        if self.problems:
            report(" ".join(self.problems))

    def close(self) -> None:
        """Stop syncing and take this object's keys out of the URL (the page replaced its
        inputs, e.g. the grid explorer opened another dataset)."""
        if self.location is None or not self._watchers:
            return
        self.target.param.unwatch(self._watchers[0])
        self.location.param.unwatch(self._watchers[1])
        self._watchers = []
        pairs, _ = screened(self.location.search)
        search = as_search([(k, v) for k, v in pairs if k not in self.names])
        if search != self.location.search:
            self.location.search = search

    def _apply(self, search: str) -> list[str]:
        """Apply the accepted values of ``search`` (``first`` ones first), then ``settle``;
        the refusals and the moves."""
        self.applying = True
        try:
            problems = self._apply_values(search)
            return problems + (self.settle() if self.settle is not None else [])
        finally:
            self.applying = False

    def _apply_values(self, search: str) -> list[str]:
        """Apply the accepted values of ``search`` (``first`` ones first); the refusals."""
        pairs, problems = screened(search)
        problems += [f"The link's {quoted(name)}= names a file, which a page never opens from "
                     "a link (upload one on the page), so it was ignored."
                     for name in dict(pairs) if name in self.unlinkable]
        unknown = [] if self.known is None else [k for k in dict(pairs) if k not in self.known]
        if unknown:
            problems.append(unknown_keys_sentence(unknown, self.names))
        counts = collections.Counter(key for key, _ in pairs)
        for name in self.names:
            if counts[name] > 1:  # which one was meant is unknown: neither is taken
                problems.append(f"The link gives {quoted(name)}= {counts[name]} times, so "
                                "none of its values was applied.")
        if self.known is not None:  # the page's name and theme: the page reads the first
            for key in PAGE_KEYS[:2]:
                if counts[key] > 1:
                    first = next(v for k, v in pairs if k == key)
                    problems.append(f"The link gives {key}= {counts[key]} times, so the first, "
                                    f"'{quoted(first)}', is used.")
        pairs = [(k, v) for k, v in pairs if not (k in self.names and counts[k] > 1)]
        clean = as_search(pairs)
        rest = [n for n in self.names if n not in self.first]
        for group, between in ((self.first, self.after_first), (rest, None)):
            if not group:
                continue
            accepted, refused = url_problems(self.target, group, clean)
            problems += refused
            try:
                self.target.param.update(accepted)
            except ValueError as exc:  # a combination the inputs refuse; the values stay
                problems.append(f"The link's values were not applied: {exc}")
            if between is not None:
                between()
        return problems

    def _to_url(self, *_events) -> None:
        """Write every input in force into the URL's query; other keys are kept (over-long
        values dropped, keys a link may not set and keys no input of the page holds too),
        each synced key once."""
        pairs, _ = screened(self.location.search)
        query: dict[str, str] = {}
        left: list[tuple[str, str]] = []  # repeats this reader leaves to the page's other one
        for key, value in pairs:
            if key in self.unlinkable or (self.known is not None and key not in self.known):
                continue
            if key not in query:
                query[key] = value  # a repeated key keeps its first value, as the page reads
            elif self.known is None and key not in self.names:
                left.append((key, value))
        query.update({n: url_text(self.target.param[n], getattr(self.target, n))
                      for n in self.names if getattr(self.target, n) is not None})
        search = as_search([*query.items(), *left])
        self._written = search
        if search != self.location.search:  # recorded only when written: an address the
            _LAST_WRITTEN[self.location] = search  # page left as it was is still judged
            self.location.search = search

    def _from_url(self, event) -> None:
        """A URL changed from the browser: apply what the page accepts, report the rest."""
        if event.new in (self._written, _LAST_WRITTEN.get(self.location)):
            return  # the page's own write (maybe seen late in a batch, or its other reader's)
        problems = self._apply(event.new)
        self.report(" ".join(problems) if problems else None)
        self._to_url()
