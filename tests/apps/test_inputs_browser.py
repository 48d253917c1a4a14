"""Inputs as a reader uses them, in headless Chromium against the session's served lab.

Typing after Enter in a slider's box (each experiment's number box:
``test_experiment_pages_browser.py``), the messages about refused values, the prediction locked at the first
choice, the sliders' labels, experiment 9's kind-specific inputs, sidebar links that carry
the state in their address, and the trace upload's sentences. Every wait is on an explicit
condition (:mod:`lab_browser`), never a fixed sleep.
"""

from __future__ import annotations

import re

from lab_browser import open_page, type_in, wait_idle
from lab_browser import page_url as url
from playwright.sync_api import expect

MESSAGE = ".lab-input-problem"


def test_a_sliders_box_takes_two_values_in_a_row(lab_url, lab_page):
    """Item 1 for an editable slider's box (experiment 10's k): after Enter it committed
    nothing more until the reader left it."""
    open_page(lab_page, url(lab_url, "speculative"))
    box = lab_page.locator(".lab-input-k input").first
    box.click()
    type_in(box, "3")
    expect(lab_page).to_have_url(re.compile(r"[?&]k=3(&|$)"))
    type_in(box, "7")
    expect(lab_page).to_have_url(re.compile(r"[?&]k=7(&|$)"))


def test_refused_values_are_explained_and_the_message_follows_the_last_one(lab_url, lab_page):
    """Item 2: a later valid value clears the message; text the box cannot read says why."""
    open_page(lab_page, url(lab_url, "context"))
    box = lab_page.locator(".lab-input-tokens input").first
    message = lab_page.locator(MESSAGE)
    in_force = box.input_value().replace(",", "")  # shown "32,768" until the box has focus
    box.click()
    type_in(box, "0")
    expect(message).to_contain_text("'0' was not applied")
    # The box shows the value in force again; typing before it did lost the keys to the
    # reset when the browser drew the box after the message (failed once under load).
    expect(box).to_have_value(in_force)
    type_in(box, "1000000000")
    expect(lab_page).to_have_url(re.compile(r"tokens=1000000000\b"))
    expect(message).to_have_count(0)
    for text in ("abc", "3.5"):
        type_in(box, text)
        expect(message).to_contain_text(f"whole number from 1 to 1,000,000,000, typed in digits; "
                                         f"'{text}' was not applied")
        expect(box).to_have_value("1000000000")  # the box shows the value in force again
    type_in(box, "1000000000")  # the value in force, typed again: nothing left to explain
    expect(message).to_have_count(0)
    expect(lab_page).to_have_url(re.compile(r"tokens=1000000000\b"))


def test_the_prediction_is_the_first_choice(lab_url, lab_page):
    """Item 3: switching to the right answer before the reveal no longer counts."""
    open_page(lab_page, url(lab_url, "prefill"))
    lab_page.get_by_role("radio", name="Yes, sooner").click()
    right = lab_page.get_by_role("radio", name="No, later")
    right.click()  # a later choice is set back: the first stays the answer
    expect(lab_page.get_by_role("radio", name="Yes, sooner")).to_be_checked()
    expect(right).not_to_be_checked()
    lab_page.locator("button", has_text="Reveal the answer").click()
    expect(lab_page.locator(".lab-answer")).to_contain_text("Not quite. The answer: No, later.")


def test_a_powers_of_two_slider_says_it_shows_the_nearest_power(lab_url, lab_page):
    """Item 4: "Requests N (powers of two): 128" read as if N were 128 (it is 100)."""
    open_page(lab_page, url(lab_url, "prefix"))
    slider = lab_page.locator(".lab-log-requests").first
    expect(slider).to_contain_text("Requests N, nearest power of two")
    expect(slider).to_contain_text("128")
    expect(lab_page.locator(".lab-input-requests input").first).to_have_value("100")


def test_measured_kind_reaches_the_url_and_shows_only_its_inputs(lab_url, lab_page,
                                                                  console_errors):
    """Item 4: switching the kind to GEMM is written to the URL; inputs of another kind are
    hidden; the GPU note names GPUs by their catalog names."""
    open_page(lab_page, url(lab_url, "measured", gpu="b200"))

    def shown(name: str):
        return lab_page.locator(f".lab-input-{name}").first

    expect(shown("batch")).to_be_visible()
    expect(shown("m")).to_be_hidden()
    regions = lab_page.locator(".lab-measured-regions").first
    expect(regions).to_contain_text("measured on NVIDIA H100 SXM")
    expect(regions).to_contain_text("NVIDIA B200")
    expect(regions).not_to_contain_text("h100-sxm")
    lab_page.locator(".lab-input-kind [role=combobox]").first.click()
    lab_page.locator("li").filter(has_text=re.compile(r"^gemm$")).first.click()
    wait_idle(lab_page)
    expect(lab_page).to_have_url(re.compile(r"kind=gemm"))
    expect(shown("m")).to_be_visible()
    for name in ("batch", "context", "tp"):
        expect(shown(name)).to_be_hidden()
    assert console_errors == []


def test_sidebar_links_carry_the_state_in_their_address(lab_url, lab_page):
    """Item 5: a link opened in a new tab keeps the model, GPU, precision and theme; a value
    the page refused is not carried, and the links follow a changed input."""
    open_page(lab_page, url(lab_url, "decode", model="llama-3.1-70b", gpu="nope",
                            theme="dark"))
    link = lab_page.get_by_role("link", name="3. Tensor parallelism")
    expect(link).to_have_attribute("href", re.compile(
        r"^\?view=tp&model=llama-3\.1-70b&gpu=h100-sxm&precision=bf16&theme=dark$"))
    lab_page.locator(".lab-input-model [role=combobox]").first.click()
    lab_page.locator("li").filter(has_text=re.compile(r"^Llama 3\.1 8B$")).click()
    expect(link).to_have_attribute("href", re.compile(r"model=llama-3\.1-8b&"))
    home = lab_page.get_by_role("link", name="Home")
    expect(home).to_have_attribute("href", re.compile(r"^\?model=llama-3\.1-8b&"))


def test_trace_upload_names_the_file_and_explains_an_empty_one(lab_url, lab_page):
    """Item 15: the sorted-rows note shows the file's own name; an empty file gets a sentence."""
    open_page(lab_page, url(lab_url, "goodput"))
    unsorted = b"request_id,arrival_s,prompt_tokens,output_tokens\n1,1.0,100,5\n2,0.5,200,3\n"
    lab_page.set_input_files("input[type=file]", files=[
        {"name": "unsorted.csv", "mimeType": "text/csv", "buffer": unsorted}])
    note = lab_page.locator(".lab-trace-sorted").first
    expect(note).to_contain_text("The rows of unsorted.csv were not in arrival order")
    expect(note).not_to_contain_text("/")
    lab_page.set_input_files("input[type=file]", files=[
        {"name": "empty.csv", "mimeType": "text/csv", "buffer": b""}])
    expect(lab_page.locator(".lab-upload-problem").first).to_contain_text(
        "The file chosen is empty (0 bytes)")


def test_text_left_by_tab_for_the_next_box_is_explained(lab_url, lab_page):
    """Leaving a box with Tab commits its text, also when the next control sits in the same
    shadow root (the document never sees that focus move): "abc" typed into the plan's isl
    box and left for the next control says why it was not applied."""
    open_page(lab_page, url(lab_url, "plan"))
    box = lab_page.locator(".lab-input-isl input").first
    box.click()
    box.press("Control+A")
    box.press_sequentially("abc")
    expect(box).to_have_value("abc")
    box.press("Tab")
    expect(lab_page.locator(MESSAGE)).to_contain_text("'abc' was not applied")
