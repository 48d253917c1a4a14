"""The small page a reader gets while other readers' pages load (:mod:`apps.ui.server.page_gate`).

It loads at once (a few hundred bytes, no scripts from the server), says that the page is
about to open, asks the server for its turn with one request that the server answers when
the turn has come (the header :data:`TURN_HEADER` names the reader's place in line), then
stores the place's id in a cookie named :data:`TURN_COOKIE` followed by the id (one cookie
per tab, so tabs of one browser never take each other's id) and reloads: the server sees the
cookie and serves the real page on the place kept for it. While it waits, the tab has
finished loading, so its browser draws no loading indicator and spends next to nothing.
Without JavaScript, it reloads every few seconds and joins the line again.
"""

from __future__ import annotations

import html
import json

TURN_HEADER = "X-Inference-Lab-Turn"
"""Request header of the waiting page's request for its turn: the reader's id."""

TURN_COOKIE = "inference_lab_turn_"
"""Start of the name of the cookie with which the reloaded page claims its reserved place
(the name ends with the reader's id; it lapses after a minute)."""

YOUR_TURN = "your turn"
"""The server's answer to a request for its turn when the turn has come (any other answer:
the reader is not in this server process's line, and the page reloads a second later)."""

RETRY_S = 5
"""Seconds between reloads without JavaScript."""


def waiting_page(reader: str, place: int) -> str:
    """The waiting page (HTML) of reader ``reader`` (an id of URL-safe characters), number
    ``place`` in line."""
    ahead = ("one reader's page is" if place == 1 else f"{place} readers' pages are")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Inference Lab · opening</title>
<noscript><meta http-equiv="refresh" content="{RETRY_S}"></noscript>
<style>body{{font-family:system-ui,sans-serif;margin:0;display:flex;min-height:100vh;
align-items:center;justify-content:center;background:#fafafa;color:#222}}
main{{max-width:32em;padding:2em;text-align:center}}
@media (prefers-color-scheme: dark){{body{{background:#121212;color:#eee}}}}</style>
</head><body><main class="lab-waiting">
<h1>Inference Lab</h1>
<p>Many readers are opening the lab right now: {html.escape(ahead, quote=False)} loading ahead of yours.
Your page opens by itself in a moment; keep this tab open.</p>
</main>
<script>
(async () => {{
  const reader = {json.dumps(reader)};
  for (let attempt = 0; attempt < 100; attempt++) {{
    try {{
      const answer = await fetch(location.href, {{headers: {{"{TURN_HEADER}": reader}},
                                                  cache: "no-store"}});
      if (answer.ok && (await answer.text()) !== "{YOUR_TURN}") {{  // not in this line
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }}
      if (answer.ok) break;
    }} catch (error) {{
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }}
  }}
  document.cookie = "{TURN_COOKIE}" + reader + "=1; path=/; max-age=60; SameSite=Strict";
  location.reload();
}})();
</script>
</body></html>
"""
