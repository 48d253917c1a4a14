"""What the inputs' number boxes do in the browser that Material UI's do not.

- **They keep taking keystrokes after Enter.** Material UI's number box (and the box of an
  editable slider) commits on Enter by marking itself unfocused while the text cursor stays in
  it: the next keystrokes then change nothing shown (the box keeps showing the formatted value
  until the reader leaves it and comes back), and a slider's box commits nothing more. After
  Enter the box is left and entered again in the browser (``blur``, ``focus``), so it is
  editing again, as it looks.
- **Entered from the keyboard, their text is selected.** Tab into a box and type: what is
  typed replaces the value, as in a plain text box (Material UI re-draws the box unformatted
  on focus, dropping the selection, so "1" typed into "2,000" applied 20001).
- **Their − and + buttons have names.** Material UI draws them as icons alone; each is named
  after its input ("Decrease Batch (sequences)"), and an editable slider's box after its
  slider, in the browser (:class:`TypedText`).
- **A text the box cannot read is reported.** A box drops text that is not a number of its
  kind ("abc", "3.5" in a whole-number box) and shows the value in force again, without a
  word: the browser reports each text committed (Enter, or leaving a box after typing) to
  :class:`TypedText`, which says why in one sentence (:func:`typed_problem`), as for a value
  out of bounds, and clears the message when a later text is one the input takes. Leaving a
  box for a control in the same shadow root (Tab to the box's own buttons) counts too: such a
  focus move never reaches the document, so the listeners sit on each shadow root as well.

Nothing here renders a typed text as markup: the sentence goes to ``InputMessage``, which
escapes it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import panel as pn
import param

from apps.ui.shell.url_values import allowed_text, page_value_problem, quoted

INT_TEXT = re.compile(r"[-+]?\d*")
"""A text a whole-number box reads (Material UI's ``int_regex``; whole text)."""
FLOAT_TEXT = re.compile(r"[-+]?\d*(?:\.\d*)?")
"""A text a decimal box reads (Material UI's ``float_regex``; whole text)."""
BLANK_TEXTS = ("", "-", ".", "-.")
"""Texts a box sends as "no value" (None), judged by the widget itself."""
MAX_TYPED_CHARS = 200
"""Longest typed text judged, characters (a longer one is cut before anything reads it)."""


def readable(kind: str, text: str) -> bool:
    """Whether a box of ``kind`` reads ``text`` as a number (else it drops it silently)."""
    if kind == "slider":  # the slider's box reads what JavaScript's Number() reads
        try:
            return math.isfinite(float(text))
        except ValueError:
            return False
    pattern = FLOAT_TEXT if kind == "float" else INT_TEXT
    return bool(pattern.fullmatch(text)) and any(c.isdigit() for c in text)


def typed_problem(parameter: param.Parameter, kind: str, text: str) -> str | None:
    """The sentence for ``text`` committed in a number box of ``kind`` (``int``/``float``)
    for ``parameter``; None when the input takes it (the message is then cleared).

    A text the box cannot read gets a sentence saying what the input takes and how to type
    it; a number it reads is judged as a value from the widget (bounds included).
    """
    if readable(kind, text):
        return page_value_problem(parameter, float(text) if kind == "float" else int(text))
    return unreadable_problem(parameter, kind, text)


def unreadable_problem(parameter: param.Parameter, kind: str, text: str) -> str:
    """One sentence: ``text`` is not a number a box of ``kind`` reads, so it was not applied."""
    label = parameter.label or parameter.name
    how = ("typed in digits with at most one decimal point" if kind == "float"
           else "typed in digits")
    return f"{label} must be {allowed_text(parameter)}, {how}; '{quoted(text)}' was not applied."


class TypedText(pn.custom.JSComponent):
    """Invisible: keeps the page's number boxes editable after Enter and reports each text
    committed in the boxes of ``boxes`` (``{input name: kind}``) as ``typed``."""

    boxes = param.Dict(default={}, doc="Input name → kind of its box: ``int`` (a whole-number "
                                       "box), ``float`` (a decimal box), ``slider`` (the box "
                                       "of an editable slider).")
    typed = param.Dict(default={}, doc="The last text committed in a box, from the browser: "
                                       "``{'name', 'text', 'n'}`` (``n`` counts commits).")

    _esm = """
    function keepEditingAfterEnter() {
      // Once per window: after Enter, leave the box and enter it again (Material UI marks it
      // unfocused on Enter while the cursor stays in it, and then ignores what is typed).
      if (window.__labKeepEditing) { return; }
      window.__labKeepEditing = true;
      document.addEventListener("keydown", (event) => {
        if (event.key !== "Enter") { return; }
        const box = event.composedPath()[0];
        if (!box || box.tagName !== "INPUT") { return; }
        // A number box, or the box of an editable slider (drawn in the slider's shadow root).
        const numberBox = box.closest(".MuiInputBase-root[inputmode=decimal]");
        const root = box.getRootNode();
        if (!numberBox && !(root.querySelector && root.querySelector(".MuiSlider-root"))) {
          return;
        }
        setTimeout(() => {
          if (!box.isConnected) { return; }
          // A number box now shows the value in force, formatted ("65,536"); once entered
          // again it would show the text typed, even one it dropped: it is given the value.
          const shown = numberBox ? box.value.replace(/,/g, "") : null;
          box.blur();
          window.__labReentering = true;
          try { box.focus(); } finally { window.__labReentering = false; }
          setTimeout(() => {  // once the box has drawn itself entered again
            if (shown === null || box.value === shown || !box.isConnected) {
              return;
            }
            const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set;
            set.call(box, shown);
            window.__labSyncingBox = true;
            try { box.dispatchEvent(new Event("input", { bubbles: true })); }
            finally { window.__labSyncingBox = false; }
          }, 0);
        }, 0);
      });
    }
    function listenInEveryRoot(type, handler) {
      // ``handler`` for every ``type`` focus event (capture), also those that stay inside one
      // shadow root: focus moving between two boxes of the same root is hidden from the
      // document (the event's target and related target are the same host there), so each
      // root an event comes out of gets the listener too. Returns the function that removes
      // every listener added.
      // Roots are found from the events that do reach the document: focus entering a root,
      // a pointer or a key pressed in it.
      const roots = new Set();
      const handled = new WeakSet();
      const discover = (event) => {
        for (const node of event.composedPath()) {
          if (node instanceof ShadowRoot && !roots.has(node)) {
            roots.add(node);
            node.addEventListener(type, listener, true);
          }
        }
      };
      const listener = (event) => {
        discover(event);
        if (handled.has(event)) { return; }
        handled.add(event);
        handler(event);
      };
      const finders = ["focusin", "pointerdown", "keydown"];
      document.addEventListener(type, listener, true);
      for (const finder of finders) { document.addEventListener(finder, discover, true); }
      return () => {
        document.removeEventListener(type, listener, true);
        for (const finder of finders) { document.removeEventListener(finder, discover, true); }
        for (const root of roots) { root.removeEventListener(type, listener, true); }
      };
    }
    function selectWhenTabbedInto() {
      // Once per window: a number box entered from the keyboard (Tab) has its text selected,
      // as a plain text box does, so what is typed replaces it. Material UI re-draws the box
      // unformatted on focus ("2,000" -> "2000"), which drops a selection made before it, so
      // the text is selected once the box has drawn itself. A click (a pointer down just
      // before) keeps its cursor, and the re-entry after Enter above selects nothing.
      if (window.__labSelectOnTab) { return; }
      window.__labSelectOnTab = true;
      let waiting = null;  // the box entered by Tab whose text is not selected yet
      let pointed = { root: null, at: -1e9 };  // the box a pointer last went down on, when
      document.addEventListener("pointerdown", (event) => {
        const el = event.composedPath()[0];
        pointed = { root: el && el.closest ? el.closest(".MuiInputBase-root") : null,
                    at: performance.now() };
      }, true);
      listenInEveryRoot("focusin", (event) => {
        const box = event.composedPath()[0];
        if (!box || box.tagName !== "INPUT" || window.__labReentering) { return; }
        const root = box.closest(".MuiInputBase-root[inputmode=decimal]");
        if (!root || (pointed.root === root && performance.now() - pointed.at < 1000)) {
          return;
        }
        waiting = box;
        const select = () => {
          if (waiting !== box) { return; }  // a key already selected it, or another box
          waiting = null;
          if (box.isConnected && box.getRootNode().activeElement === box) { box.select(); }
        };
        setTimeout(() => requestAnimationFrame(select), 0);
      });
      // A key typed before that frame (a fast typist, a busy page: keys outrun timers) selects
      // the text first, so it still replaces it: "1500" typed into "500" read "500" (the "1"
      // went in at the cursor, then the late selection was replaced by "500").
      listenInEveryRoot("keydown", (event) => {
        const box = event.composedPath()[0];
        if (!box || box !== waiting || event.ctrlKey || event.metaKey || event.altKey) { return; }
        if (event.key.length === 1 || event.key === "Backspace" || event.key === "Delete") {
          waiting = null;
          box.select();
        }
      });
    }
    function nameTheSteppers() {
      // Once per window: Material UI's number box has icon-only − and + buttons, and an
      // editable slider's box no label: a screen reader announced "button" and an unnamed
      // text box. Each gets a name from its input's label ("Decrease Batch (sequences)"),
      // now, in the page's first seconds, and whenever the keyboard reaches a control (a
      // widget drawn later, or again).
      if (window.__labNameSteppers) { return; }
      window.__labNameSteppers = true;
      const hosts = (root, out) => {
        for (const el of root.querySelectorAll("*")) {
          if ([...el.classList].some((c) => c.startsWith("lab-input-"))) { out.push(el); }
          if (el.shadowRoot) { hosts(el.shadowRoot, out); }
        }
        return out;
      };
      const name = () => {
        for (const host of hosts(document, [])) {
          const root = host.shadowRoot || host;
          const labelled = root.querySelector("label");
          const label = labelled ? labelled.textContent.replace(/\\s+/g, " ").trim() : "";
          if (!label) { continue; }
          for (const box of root.querySelectorAll(".MuiInputBase-root")) {
            const buttons = [...box.querySelectorAll("button")].filter(
              (b) => !b.getAttribute("aria-label") && !b.textContent.trim());
            if (buttons.length === 2) {
              buttons[0].setAttribute("aria-label", "Decrease " + label);
              buttons[1].setAttribute("aria-label", "Increase " + label);
            }
            const input = box.querySelector("input");
            if (input && !input.labels?.length && !input.getAttribute("aria-label")
                && !input.getAttribute("aria-labelledby")) {
              input.setAttribute("aria-label", label);
            }
          }
        }
      };
      // One walk of the page when the browser is idle, however many focus moves ask for one:
      // never inside the focus move itself, whose box selects its text on the next frame
      // (a walk there let the first typed key land before the selection).
      let pending = false;
      const idle = window.requestIdleCallback || ((fn) => setTimeout(fn, 200));
      const soon = () => {
        if (pending) { return; }
        pending = true;
        idle(() => { pending = false; name(); }, { timeout: 1000 });
      };
      for (const wait of [0, 500, 2000, 5000, 10000]) { setTimeout(name, wait); }
      document.addEventListener("focusin", soon, true);
    }
    export function render({ model }) {
      keepEditingAfterEnter();
      selectWhenTabbedInto();
      nameTheSteppers();
      const edited = new WeakSet();
      let count = 0;
      const boxName = (event) => {
        const box = event.composedPath()[0];
        if (!box || box.tagName !== "INPUT") { return null; }
        // Up from the box through every shadow root's host: an event kept inside one shadow
        // root (focus moving to a control beside the box) has a path that ends at that root.
        for (let el = box; el; el = el.parentNode || el.host) {
          for (const cls of (el.classList || [])) {
            if (cls.startsWith("lab-input-") && (cls.slice(10) in model.boxes)) {
              return cls.slice(10);
            }
          }
        }
        return null;
      };
      const onInput = (event) => {  // the page's own re-sync after Enter is not typing
        if (!window.__labSyncingBox && boxName(event)) { edited.add(event.composedPath()[0]); }
      };
      const commit = (event) => {
        const name = boxName(event);
        const box = event.composedPath()[0];
        if (!name || !edited.has(box)) { return; }
        edited.delete(box);
        model.typed = { name: name, text: String(box.value).slice(0, MAX_CHARS), n: ++count };
      };
      const onKey = (event) => { if (event.key === "Enter") { commit(event); } };
      // Capture: the typed text is read before the box replaces it.
      document.addEventListener("input", onInput, true);
      document.addEventListener("keydown", onKey, true);
      const stopCommitting = listenInEveryRoot("focusout", commit);
      model.on("remove", () => {
        document.removeEventListener("input", onInput, true);
        document.removeEventListener("keydown", onKey, true);
        stopCommitting();
      });
      const span = document.createElement("span");
      span.style.display = "none";
      return span;
    }
    """.replace("MAX_CHARS", str(MAX_TYPED_CHARS))


def watch_typed(owner: param.Parameterized, boxes: dict[str, str],
                report: Callable[[str | None], None]) -> TypedText:
    """A :class:`TypedText` for ``boxes`` of ``owner``'s inputs whose commits are judged and
    sent to ``report`` (a blank box is left to the widget, which refuses None itself)."""
    typed = TypedText(boxes=dict(boxes), margin=0)

    def judge(event) -> None:
        data = event.new if isinstance(event.new, dict) else {}
        name, text = data.get("name"), data.get("text")
        if not isinstance(name, str) or not isinstance(text, str) or name not in boxes:
            return
        text = text[:MAX_TYPED_CHARS]
        kind, parameter = boxes[name], owner.param[name]
        if kind == "slider":  # a number is rounded and held to the slider's range there
            if not readable(kind, text):
                report(unreadable_problem(parameter, kind, text))
        elif text not in BLANK_TEXTS:
            report(typed_problem(parameter, kind, text))

    typed.param.watch(judge, "typed")
    return typed
