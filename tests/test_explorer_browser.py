"""The explorer page in headless Chromium against a real gunicorn gevent server, both eras.

The page (``flask_mcp/explorer``) is served by ``tests/_apps/explorer_app.py`` and talks
to the same server's ``/mcp`` as a real client. Every test records the page's requests and
checks that none left the app's origin, and that the page threw no exception and logged
no error. Screenshots go to ``MCP_TEST_EXPLORER_SCREENSHOTS``
(a directory) when it is set; ``docs/_static/explorer-*.png`` were taken that way.
"""

from __future__ import annotations

import json
import os
import re
import typing as t
from pathlib import Path
from urllib.parse import parse_qs
from urllib.parse import urljoin
from urllib.parse import urlsplit

import httpx
import pytest
from harness import free_port
from harness import start_server
from wire import headers_2026
from wire import meta

from tests._apps.explorer_app import CALENDAR_URL
from tests._apps.explorer_app import DOT_PNG
from tests._apps.explorer_app import REPORT_BYTES
from tests._apps.explorer_app import TICK_WAV

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

ERAS = ["2025-11-25", "2026-07-28"]
WAIT_MS = 30_000
#: What the page says of a URL elicitation the server told done.
COMPLETED = "Completed: the server says the interaction at this page is done."
APP = "tests._apps.explorer_app:app"
SCREENSHOTS = os.environ.get("MCP_TEST_EXPLORER_SCREENSHOTS")


def origin(server: t.Any) -> str:
    """The server's origin (``server.url`` is its MCP endpoint)."""
    parts = urlsplit(server.url)
    return f"{parts.scheme}://{parts.netloc}"


@pytest.fixture(scope="module")
def server() -> t.Iterator[t.Any]:
    with start_server(APP, "gevent", env={"MCP_TEST_EXPLORER": "debug"}) as served:
        yield served


class Explorer:
    """The explorer in a tab, with every request the tab made."""

    def __init__(
        self, browser: t.Any, server: t.Any, era: str, *, cookie: bool = False, also: str = ""
    ) -> None:
        self.server = server
        self.era = era
        self.origin = origin(server)
        self.allowed = (self.origin + "/", also + "/") if also else (self.origin + "/",)
        #: Set by a test that makes the view break its policy on purpose.
        self.probes_csp = False
        context = browser.new_context(viewport={"width": 1180, "height": 900})
        if cookie:
            context.add_cookies([{"name": "explorer", "value": "yes", "url": self.origin}])
        self.context = context
        self.page = context.new_page()
        self.requests: list[str] = []
        self.console: list[str] = []
        #: Exceptions the page's scripts threw and errors they logged: close() fails on any.
        self.errors: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("console", self.on_console)
        self.page.on("pageerror", self.on_page_error)

    def on_console(self, message: t.Any) -> None:
        self.console.append(message.text)
        # a refused fetch (HTTP 401, 404) is logged by Chromium, not thrown by the page; a
        # policy refusal is checked on its own
        text = message.text
        refused = text.startswith("Failed to load resource") or "Content Security Policy" in text
        if message.type == "error" and not refused:
            self.errors.append(f"console error: {text}")

    def on_page_error(self, error: t.Any) -> None:
        self.console.append(f"page error: {error}")
        self.errors.append(f"page error: {error}")

    def open(self) -> t.Any:
        response = self.page.goto(f"{self.origin}/_mcp/explorer/?era={self.era}")
        try:
            self.page.wait_for_selector("body[data-connected]", state="attached", timeout=WAIT_MS)
        except Exception as exc:
            raise AssertionError(self.explain()) from exc
        assert self.page.get_attribute("body", "data-connected") == self.era, self.explain()
        return response

    def explain(self) -> str:
        status = self.page.text_content("#status")
        console = "\n".join(self.console[-30:])
        return f"status: {status}\nconsole:\n{console}\nserver:\n{self.server.log_tail()}"

    def tool(self, name: str) -> None:
        self.page.click("button.tab[data-section=tools]")
        self.page.click(f"#tool-list button:has(.item-name:text-is('{name}'))")
        self.page.wait_for_selector("#tool-form", timeout=WAIT_MS)

    def call(self) -> None:
        self.page.click("#call-tool")

    def wait_state(self, pattern: str) -> str:
        self.page.wait_for_selector(f"#call-state:text-matches('{pattern}')", timeout=WAIT_MS)
        return t.cast(str, self.page.text_content("#call-state"))

    def finish_url_elicitation(self, shown: t.Any) -> None:
        """Finish at the server the URL elicitation ``shown`` links to, wait until the page
        marks it completed, then click its "Try again" (hidden until then)."""
        again = shown.get_by_role("button", name="Try again")
        assert again.is_hidden()
        href = shown.get_by_role("link").get_attribute("href")
        elicitation_id = parse_qs(urlsplit(href).query)["elicitationId"][0]
        # the user finishes the flow at the server, which tells the session
        answer = httpx.get(
            f"{self.origin}/drive/connected", params={"elicitationId": elicitation_id}
        )
        assert answer.status_code == 200
        shown.locator(f".elicitation-status:text-is('{COMPLETED}')").wait_for(timeout=WAIT_MS)
        again.click()

    def screenshot(self, name: str, *, full_page: bool = True) -> None:
        """Save a screenshot (Chromium leaves nested iframes blank in full-page ones)."""
        if SCREENSHOTS:
            Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
            path = Path(SCREENSHOTS) / f"explorer-{name}.png"
            self.page.screenshot(path=str(path), full_page=full_page)

    def close(self) -> None:
        """Check that nothing left the app's origin, then close the tab."""
        foreign = [
            url
            for url in self.requests
            if not url.startswith(self.allowed) and not url.startswith(("data:", "about:", "blob:"))
        ]
        refused = [line for line in self.console if "Content Security Policy" in line]
        self.context.close()
        assert self.errors == [], f"the page threw or logged errors: {self.errors}"
        assert self.requests, "the page made no request at all"
        if not self.probes_csp:
            assert refused == [], f"the page broke its own policy: {refused}"
        assert foreign == [], f"requests outside {self.origin}: {foreign}"


@pytest.fixture(params=ERAS)
def explorer(request: t.Any, browser: t.Any, server: t.Any) -> t.Iterator[Explorer]:
    tab = Explorer(browser, server, request.param)
    tab.open()
    yield tab
    tab.close()


def test_server_info_lists_and_a_tool_called_through_its_generated_form(explorer: Explorer) -> None:
    page = explorer.page
    assert "Explorer demo" in page.text_content("#server-name")
    assert "counter_view shows a counter" in page.text_content("#server-instructions")
    assert '"tools"' in page.text_content("#server-capabilities")
    explorer.tool("describe_trip")
    # required fields are marked, the enum is a select, optional numbers and booleans,
    # a list of strings with add/remove, a nested object's fields and a free object as JSON
    assert page.text_content("label[for]:has-text('city')") == "city (required)"
    page.get_by_label("city (required)").fill("Lisbon")
    page.get_by_label("nights (required)").fill("3")
    page.get_by_label("unit").select_option(label="fahrenheit")
    page.get_by_label("budget").fill("99.5")
    page.get_by_label("refundable").check()
    page.get_by_role("button", name="Add item to stops").click()
    page.get_by_role("button", name="Add item to stops").click()
    page.get_by_label("stops item 1 (required)").fill("Sintra")
    page.get_by_label("stops item 2 (required)").fill("Porto")
    traveller = page.locator("fieldset:has(legend:text-is('traveller'))")
    traveller.get_by_label("name (required)").fill("Ada")
    traveller.get_by_label("age (required)").fill("36")
    page.get_by_label("extras (JSON)").fill('{"seat": "window"}')
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    structured = json.loads(page.text_content("#call-structured"))
    assert structured == {
        "city": "Lisbon",
        "nights": 3,
        "unit": "fahrenheit",
        "budget": 99.5,
        "refundable": True,
        "stops": ["Sintra", "Porto"],
        "traveller": {"name": "Ada", "age": 36},
        "extras": {"seat": "window"},
    }
    assert page.text_content("#call-schema-check") == "Matches the output schema."
    exchange = page.text_content("#call-exchange")
    assert '"method": "tools/call"' in exchange and '"structuredContent"' in exchange
    explorer.screenshot(f"tool-{explorer.era}")

    # copy as curl and as flask mcp call show what the page sends
    page.click("#copy-flask")
    flask_call = page.input_value("#copy-output")
    assert flask_call.startswith("flask mcp call 'describe_trip' --json '{")
    page.click("#copy-curl")
    curl = page.input_value("#copy-output")
    assert f"curl -sS -N -X POST '{explorer.origin}/mcp'" in curl
    header = "Mcp-Method: tools/call" if explorer.era >= "2026" else "Mcp-Session-Id: "
    assert header in curl


def test_a_tool_with_a_raw_json_fallback_and_a_bad_argument(explorer: Explorer) -> None:
    page = explorer.page
    explorer.tool("add")
    page.get_by_label("a (required)").fill("2")
    page.get_by_label("Edit as raw JSON").check()
    raw = json.loads(page.input_value("textarea[name=raw-arguments]"))
    assert raw == {"a": 2}
    page.fill("textarea[name=raw-arguments]", '{"a": 2, "b": 40}')
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert json.loads(page.text_content("#call-structured")) == {"result": 42}
    page.fill("textarea[name=raw-arguments]", '{"a": 2, "b": "x"}')
    explorer.call()
    state = explorer.wait_state("finished with a tool error|failed")
    assert state in ("finished with a tool error", "failed")
    assert page.locator("#call-outcome").text_content()


def test_an_optional_string_left_empty_is_left_out(explorer: Explorer) -> None:
    """``language: str | None = None``: its default null is no value, not the text "null".
    A value that may be null can be sent as null from the form, also a required one."""
    page = explorer.page
    explorer.tool("find")
    assert page.get_by_label("language").input_value() == ""
    page.get_by_label("query (required)").fill("flask")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert page.text_content("#call-outcome .text-block") == "flask in any language"
    # a value that may be null has a "null" box: an explicit null, required or not
    explorer.tool("tag")
    note = page.locator(".nullable:has(label:text-is('note (required)'))")
    color = page.locator(".nullable:has(label:text-is('color'))")
    assert color.get_by_label("color").input_value() == "blue"
    note.get_by_label("null").check()
    color.get_by_label("null").check()
    assert note.get_by_label("note (required)").is_disabled()
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert json.loads(page.text_content("#call-structured")) == {"note": None, "color": None}
    page.get_by_label("Edit as raw JSON").check()
    raw = json.loads(page.input_value("textarea[name=raw-arguments]"))
    assert raw == {"note": None, "color": None}
    page.fill("textarea[name=raw-arguments]", '{"note": "hi"}')
    page.get_by_label("Edit as raw JSON").uncheck()
    assert (
        not note.get_by_label("null").is_checked() and not color.get_by_label("null").is_checked()
    )
    assert note.get_by_label("note (required)").input_value() == "hi"
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert json.loads(page.text_content("#call-structured")) == {"note": "hi", "color": "blue"}


def test_an_optional_boolean_clicked_can_be_left_not_set_again(explorer: Explorer) -> None:
    """``refundable: bool = False`` checked, then Unset: left out of the arguments (the
    server's default), as before it was clicked; so too from raw JSON without it."""
    page = explorer.page
    explorer.tool("describe_trip")
    page.get_by_label("city (required)").fill("Lisbon")
    page.get_by_label("nights (required)").fill("3")
    refundable = page.get_by_label("refundable")
    unset = page.locator(".field-check:has(label:text-is('refundable')) button.unset")
    assert unset.is_hidden()
    refundable.check()
    page.click("#copy-flask")
    assert '"refundable":true' in page.input_value("#copy-output")
    unset.click()
    assert unset.is_hidden() and not refundable.is_checked()
    page.click("#copy-flask")
    assert "refundable" not in page.input_value("#copy-output")
    # raw JSON without it, back to the form: still not set (it was read as false)
    refundable.check()
    refundable.uncheck()
    page.get_by_label("Edit as raw JSON").check()
    assert json.loads(page.input_value("textarea[name=raw-arguments]"))["refundable"] is False
    page.fill("textarea[name=raw-arguments]", '{"city": "Lisbon", "nights": 3}')
    page.get_by_label("Edit as raw JSON").uncheck()
    page.click("#copy-flask")
    assert "refundable" not in page.input_value("#copy-output")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert json.loads(page.text_content("#call-structured"))["refundable"] is False


def test_an_optional_object_left_empty_is_left_out(explorer: Explorer) -> None:
    """``traveller: Traveller | None = None``: its required fields are required once it is
    started, not while it is left empty."""
    page = explorer.page
    explorer.tool("describe_trip")
    page.get_by_label("city (required)").fill("Lisbon")
    page.get_by_label("nights (required)").fill("3")
    explorer.call()
    assert page.text_content("#tool-form .error-text") == ""
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    sent = json.loads(page.locator("#call-exchange .exchange-out pre").first.text_content())
    assert sent["params"]["arguments"] == {"city": "Lisbon", "nights": 3, "unit": "celsius"}
    traveller = page.locator("fieldset:has(legend:text-is('traveller'))")
    traveller.get_by_label("name (required)").fill("Ada")
    explorer.call()
    assert page.text_content("#tool-form .error-text") == "traveller.age is required"


def test_array_items_are_numbered_again_after_one_is_removed(explorer: Explorer) -> None:
    """Removing an item renumbers the rest: no two fields share a label or a path."""
    page = explorer.page
    explorer.tool("describe_trip")
    page.get_by_label("city (required)").fill("Lisbon")
    page.get_by_label("nights (required)").fill("3")
    traveller = page.locator("fieldset:has(legend:text-is('traveller'))")
    traveller.get_by_label("name (required)").fill("Ada")
    traveller.get_by_label("age (required)").fill("36")
    add = page.get_by_role("button", name="Add item to stops")
    for _ in range(3):
        add.click()
    for number, stop in enumerate(["Sintra", "Cascais", "Porto"], 1):
        page.get_by_label(f"stops item {number} (required)").fill(stop)
    items = page.locator("fieldset.array:has(legend:text-is('stops')) .array-item")
    items.nth(0).get_by_role("button").click()
    add.click()
    labels = items.locator("label").all_text_contents()
    assert labels == [f"stops item {n} (required)" for n in (1, 2, 3)]
    removers = [items.nth(n).get_by_role("button").get_attribute("aria-label") for n in range(3)]
    assert removers == [f"Remove stops item {n}" for n in (1, 2, 3)]
    page.get_by_label("stops item 3 (required)").fill("Braga")
    names = [items.nth(n).locator("input").get_attribute("name") for n in range(3)]
    assert names == ["stops[0]", "stops[1]", "stops[2]"]
    assert [items.nth(n).locator("input").input_value() for n in range(3)] == [
        "Cascais",
        "Porto",
        "Braga",
    ]
    # an empty item is named by its place in the list as it is now
    page.get_by_role("button", name="Remove stops item 1").click()
    add.click()
    explorer.call()
    assert page.text_content("#tool-form .error-text") == "stops[2] is required"
    page.get_by_label("stops item 3 (required)").fill("Faro")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert json.loads(page.text_content("#call-structured"))["stops"] == ["Porto", "Braga", "Faro"]


def test_integers_past_2_to_the_53_are_shown_exactly(explorer: Explorer) -> None:
    """JSON.parse would round 9007199254740993 to ...992: the page shows the server's digits."""
    page = explorer.page
    explorer.tool("big_numbers")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    expected = {
        "exact": 2**53 + 1,
        "negative": -(2**60) - 1,
        "listed": [2**62 + 7],
        "safe": 2**53 - 1,
    }
    assert json.loads(page.text_content("#call-structured")) == expected
    assert page.text_content("#call-schema-check") == "Matches the output schema."
    answer = page.locator("#call-exchange .exchange-in pre").last.text_content()
    assert json.loads(answer)["result"]["structuredContent"] == expected
    page.click("button.tab[data-section=exchange]")
    assert "9007199254740993" in page.text_content("#exchange")


def test_blobs_are_shown_as_media_or_offered_as_downloads(explorer: Explorer) -> None:
    """An embedded resource's or a read resource's ``blob``: an image, a sound, a file."""
    page = explorer.page
    explorer.tool("attachments")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    outcome = page.locator("#call-outcome")
    image = outcome.get_by_role("img", name="Image files://pictures/dot.png (image/png)")
    assert image.get_attribute("src") == f"data:image/png;base64,{DOT_PNG}"
    assert image.evaluate("node => node.complete && node.naturalWidth") == 1
    sound = outcome.locator("audio[aria-label='Audio files://sounds/tick.wav']")
    assert sound.get_attribute("src") == f"data:audio/wav;base64,{TICK_WAV}"
    size = f"application/pdf, {len(REPORT_BYTES)} bytes"
    assert outcome.get_by_text(size).count() == 1
    with page.expect_download() as download:
        outcome.get_by_role("link", name="Download q3.pdf").click()
    assert download.value.suggested_filename == "q3.pdf"
    assert Path(download.value.path()).read_bytes() == REPORT_BYTES

    page.click("button.tab[data-section=resources]")
    page.click("#resource-list button:has(.item-detail:text-is('files://reports/q4.bin"
               " · application/octet-stream'))")  # fmt: skip
    with page.expect_download() as download:
        page.get_by_role("link", name="Download q4.bin").click(timeout=WAIT_MS)
    assert Path(download.value.path()).read_bytes() == REPORT_BYTES


def blob_size(explorer: Explorer, href: str) -> int | str:
    """Fetch a blob URL of the page from another tab of its origin: its size, or "gone".

    The other tab is a page of the app without the explorer's policy, which allows no
    fetch of a ``blob:`` URL.
    """
    tab = explorer.context.new_page()
    try:
        tab.goto(f"{explorer.origin}/no-such-page")
        script = (
            "href => fetch(href).then(r => r.arrayBuffer()).then(b => b.byteLength, () => 'gone')"
        )
        return t.cast("int | str", tab.evaluate(script, href))
    finally:
        tab.close()


def test_download_links_are_released_with_their_result(explorer: Explorer) -> None:
    """A blob's download link (URL.createObjectURL) is revoked once its result is replaced."""
    page = explorer.page
    explorer.tool("attachments")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    first = page.get_by_role("link", name="Download q3.pdf").get_attribute("href")
    assert blob_size(explorer, first) == len(REPORT_BYTES)
    explorer.call()  # the new result replaces the first
    page.wait_for_function("href => !document.querySelector(`a[href='${href}']`)", arg=first)
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    second = page.get_by_role("link", name="Download q3.pdf").get_attribute("href")
    assert second != first
    assert blob_size(explorer, first) == "gone"
    assert blob_size(explorer, second) == len(REPORT_BYTES)
    explorer.tool("add")  # another tool's form replaces the result
    assert blob_size(explorer, second) == "gone"

    page.click("button.tab[data-section=resources]")
    q4 = "#resource-list button:has(.item-detail:text-is('files://reports/q4.bin"
    q4 += " · application/octet-stream'))"
    page.click(q4)
    link = page.get_by_role("link", name="Download q4.bin")
    read = link.get_attribute("href", timeout=WAIT_MS)
    assert blob_size(explorer, read) == len(REPORT_BYTES)
    page.click(q4)  # read again
    page.wait_for_function("href => !document.querySelector(`a[href='${href}']`)", arg=read)
    assert blob_size(explorer, read) == "gone"


def test_a_url_elicitation_required_error_shows_the_pages_to_open(
    browser: t.Any, server: t.Any
) -> None:
    """-32042 (2025-11-25): the message and each URL, as a link only when it is http(s)."""
    explorer = Explorer(browser, server, "2025-11-25")
    explorer.open()
    page = explorer.page
    explorer.tool("connect_calendar")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "failed", explorer.explain()
    error = page.locator("#call-outcome [role=alert]")
    text = error.text_content()
    assert "Your calendar is not connected." in text
    assert "Connect your calendar to book a table." in text
    assert '"elicitations"' not in text  # not the raw error data
    link = error.get_by_role("link", name=CALENDAR_URL)
    assert link.get_attribute("href") == CALENDAR_URL
    assert link.get_attribute("rel") == "noopener noreferrer"
    assert "A link the page must not make clickable." in text
    assert "javascript:alert(1)" in text
    assert error.get_by_role("link").count() == 1
    explorer.close()  # the page opened nothing by itself: no request left the app's origin


def test_a_completed_url_elicitation_lets_the_call_be_tried_again(
    browser: t.Any, server: t.Any
) -> None:
    """notifications/elicitation/complete (2025-11-25) marks the -32042 error's elicitation
    completed; once all are, the page offers to try the call again, which then succeeds."""
    explorer = Explorer(browser, server, "2025-11-25")
    explorer.open()
    page = explorer.page
    explorer.tool("connect_drive")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "failed", explorer.explain()
    error = page.locator("#call-outcome .url-elicitations")
    assert "Not completed yet" in error.text_content()
    explorer.finish_url_elicitation(error)
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert "drive connected" in page.text_content("#call-outcome")
    explorer.close()


@pytest.mark.parametrize("method", ["resources/read", "prompts/get"])
def test_a_url_elicitation_required_by_a_read_or_a_prompt_lets_it_be_tried_again(
    browser: t.Any, server: t.Any, method: str
) -> None:
    """-32042 on resources/read or prompts/get is shown as on tools/call: the pages to
    open, then, once the server says they are done, a "Try again" that succeeds."""
    explorer = Explorer(browser, server, "2025-11-25")
    explorer.open()
    page = explorer.page
    if method == "resources/read":
        page.click("button.tab[data-section=resources]")
        page.click("#resource-list button:has(.item-name:text-is('drive_files'))")
        detail = page.locator("#resource-contents")
        done = "the drive's files"
    else:
        page.click("button.tab[data-section=prompts]")
        page.click("#prompt-list button:has(.item-detail:text-is('drive_summary'))")
        page.click("#prompt-form button[type=submit]")
        detail = page.locator("#prompt-messages")
        done = "Summarize the drive."
    error = detail.locator(".url-elicitations")
    error.wait_for(timeout=WAIT_MS)
    assert "Your drive is not connected." in error.text_content()
    explorer.finish_url_elicitation(error)
    detail.get_by_text(done).wait_for(timeout=WAIT_MS)
    assert detail.locator(".url-elicitations").count() == 0
    explorer.close()


def test_an_accepted_url_elicitation_is_marked_completed(browser: t.Any, server: t.Any) -> None:
    """elicitation/create in URL mode: after Accept the page to open stays, marked completed
    when the server sends notifications/elicitation/complete for its elicitationId."""
    explorer = Explorer(browser, server, "2025-11-25")
    explorer.open()
    page = explorer.page
    explorer.tool("link_account")
    explorer.call()
    question = page.locator("#call-questions form")
    question.wait_for(timeout=WAIT_MS)
    assert "Not completed yet" in question.text_content()
    question.get_by_role("button", name="Accept").click()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    asked = page.locator("#call-questions .url-elicitation")
    asked.locator(f".elicitation-status:text-is('{COMPLETED}')").wait_for(timeout=WAIT_MS)
    assert "Link your account." in asked.text_content()
    assert asked.get_by_role("link").get_attribute("href") == "https://accounts.example.com/link"
    explorer.close()


def test_integers_past_2_to_the_53_are_sent_as_typed(explorer: Explorer) -> None:
    """JSON.stringify of a number would send 9007199254740993 as ...992: the typed digits go."""
    page = explorer.page
    explorer.tool("echo_integers")

    def call_and_check(value: int, more: list[int]) -> None:
        explorer.call()
        assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
        expected = {"value": value, "more": more}
        assert json.loads(page.text_content("#call-structured")) == expected
        sent = page.locator("#call-exchange .exchange-out pre").first.text_content()
        assert json.loads(sent)["params"]["arguments"] == expected

    page.fill("input[name=value]", "9007199254740993")
    page.click("button:text-is('Add item to more')")
    page.fill("input[name='more[0]']", "-1152921504606846977")
    call_and_check(2**53 + 1, [-(2**60) - 1])

    page.get_by_label("Edit as raw JSON").check()
    raw = json.loads(page.input_value("textarea[name=raw-arguments]"))
    assert raw == {"value": 2**53 + 1, "more": [-(2**60) - 1]}
    page.fill(
        "textarea[name=raw-arguments]", '{"value": 9007199254740995, "more": [18014398509481985]}'
    )
    call_and_check(2**53 + 3, [2**54 + 1])

    page.get_by_label("Edit as raw JSON").uncheck()  # back to the fields, with the digits
    assert page.input_value("input[name=value]") == "9007199254740995"
    assert page.input_value("input[name='more[0]']") == "18014398509481985"
    call_and_check(2**53 + 3, [2**54 + 1])


def test_an_enum_of_integers_past_2_to_the_53_sends_the_chosen_digits(explorer: Explorer) -> None:
    """9007199254740993 and ...992 are one JavaScript number: each option shows and sends
    the digits the schema lists, also through the raw JSON."""
    page = explorer.page
    explorer.tool("pick_big")
    choice = page.get_by_label("choice (required)")
    assert choice.locator("option").all_text_contents() == [
        "9007199254740993",
        "9007199254740992",
        "7",
    ]

    def call_and_check(value: int) -> None:
        explorer.call()
        assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
        assert json.loads(page.text_content("#call-structured")) == {"choice": value}
        sent = page.locator("#call-exchange .exchange-out pre").first.text_content()
        assert json.loads(sent)["params"]["arguments"] == {"choice": value}

    choice.select_option(label="9007199254740993")
    call_and_check(2**53 + 1)
    choice.select_option(label="9007199254740992")
    call_and_check(2**53)

    page.get_by_label("Edit as raw JSON").check()
    assert json.loads(page.input_value("textarea[name=raw-arguments]")) == {"choice": 2**53}
    page.fill("textarea[name=raw-arguments]", '{"choice": 9007199254740993}')
    page.get_by_label("Edit as raw JSON").uncheck()  # back to the select, on that option
    assert choice.evaluate("select => select.selectedOptions[0].text") == "9007199254740993"
    call_and_check(2**53 + 1)


def test_an_argument_mirrored_in_a_header(explorer: Explorer) -> None:
    """2026-07-28 requires Mcp-Param-Region (base64 when not plain ASCII); the server checks it."""
    page = explorer.page
    explorer.tool("forecast")
    page.get_by_label("region (required)").fill("Île-de-France")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert page.text_content("#call-outcome .text-block") == "Sunny in Île-de-France."
    page.click("#copy-curl")
    curl = page.input_value("#copy-output")
    if explorer.era >= "2026":
        assert "Mcp-Param-Region: =?base64?w45sZS1kZS1GcmFuY2U=?=" in curl
        assert "Mcp-Name: forecast" in curl
    else:
        assert "Mcp-Param-Region" not in curl


def test_a_tool_declared_while_serving_appears_in_the_list(explorer: Explorer) -> None:
    """notifications/tools/list_changed on the GET stream or subscriptions/listen."""
    page = explorer.page
    name = "made_" + explorer.era.replace("-", "_")
    explorer.tool("add_a_tool")
    page.get_by_label("name (required)").fill(name)
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    listed = page.locator(f"#tool-list button:has(.item-name:text-is('{name}'))")
    listed.wait_for(timeout=WAIT_MS)
    listed.click()
    page.wait_for_selector(f"#tool-heading:text-is('{name}')", timeout=WAIT_MS)
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert page.text_content("#call-outcome .text-block") == f"I am {name}, made at run time."
    assert "list_changed" in page.text_content("#exchange")
    # the list changes again, but listing it fails (the server is gone by then, say): the
    # page says so, as it does other failures, and throws nothing (close() checks)

    def unreachable(route: t.Any) -> None:
        if '"method":"tools/list"' in (route.request.post_data or ""):
            route.abort("connectionrefused")
        else:
            route.continue_()

    page.route("**/mcp", unreachable)
    explorer.tool("add_a_tool")
    page.get_by_label("name (required)").fill(name + "_again")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    page.wait_for_selector("#status:has-text('listing them again failed')", timeout=WAIT_MS)
    page.unroute("**/mcp", unreachable)


def test_a_tool_removed_while_serving_can_no_longer_be_called(explorer: Explorer) -> None:
    """The page kept a tool the server removed in its tool map: its open form still called
    it, and a view could call it; it is marked removed now and its Call button is off."""
    page = explorer.page
    name = "gone_" + explorer.era.replace("-", "_")
    explorer.tool("add_a_tool")
    page.get_by_label("name (required)").fill(name)
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    explorer.tool(name)
    params = {"name": "remove_a_tool", "arguments": {"name": name}}
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {**params, "_meta": meta()},
    }
    with httpx.Client(timeout=WAIT_MS / 1000) as http:
        response = http.post(
            explorer.server.url, headers=headers_2026("tools/call", params), json=message
        )
    assert f"removed {name}" in response.text, response.text
    listed = page.locator(f"#tool-list button:has(.item-name:text-is('{name}'))")
    listed.wait_for(state="detached", timeout=WAIT_MS)
    page.wait_for_selector("#tool-form[data-removed]", timeout=WAIT_MS)
    assert page.is_disabled("#call-tool")
    assert f"The server removed {name}" in page.text_content("#tool-form .error-text")


def test_a_session_the_server_ended_is_replaced_by_a_new_one(browser: t.Any, server: t.Any) -> None:
    """2025-11-25: a 404 to a request with a session id means the session is gone (the dev
    server reloaded, say); the client MUST start a new one. The page kept sending the dead
    id and every call failed until the user connected again."""
    tab = Explorer(browser, server, "2025-11-25")
    tab.open()
    page = tab.page
    old = page.text_content("#server-protocol").rsplit(" ", 1)[-1]
    with httpx.Client(timeout=WAIT_MS / 1000) as http:
        ended = http.delete(
            server.url, headers={"Mcp-Session-Id": old, "MCP-Protocol-Version": "2025-11-25"}
        )
    assert ended.status_code in (200, 202, 204), ended.text
    tab.tool("add")
    page.get_by_label("a (required)").fill("2")
    page.get_by_label("b (required)").fill("3")
    tab.call()
    assert tab.wait_state("finished|failed") == "finished", tab.explain()
    assert json.loads(page.text_content("#call-structured")) == {"result": 5}
    assert old not in page.text_content("#server-protocol")
    tab.console = [line for line in tab.console if "404" not in line]
    tab.close()


def test_a_question_the_server_withdrew_leaves_the_page(browser: t.Any) -> None:
    """2025-11-25: past MCP_CLIENT_REQUEST_TIMEOUT the server sends notifications/cancelled
    for its elicitation and the tool goes on; the form stayed, its answer going nowhere."""
    env = {"MCP_TEST_EXPLORER": "debug", "MCP_TEST_EXPLORER_CLIENT_TIMEOUT": "1"}
    with start_server(APP, "gevent", env=env) as served:
        tab = Explorer(browser, served, "2025-11-25")
        tab.open()
        tab.tool("ask_briefly")
        tab.call()
        question = tab.page.locator("form.question")
        question.wait_for(timeout=WAIT_MS)
        # its buttons, as a click that comes as the server withdraws it would find them
        buttons = [
            question.get_by_role("button", name=name).element_handle()
            for name in ("Accept", "Decline", "Cancel")
        ]
        tab.page.wait_for_selector("#call-logs li", timeout=WAIT_MS)
        assert tab.page.locator("form.question").count() == 0
        assert "withdrew its elicitation/create" in tab.page.text_content("#call-questions")
        for button in buttons:  # answering the form taken off the page throws nothing
            button.evaluate("button => button.click()")
        assert tab.wait_state("finished|failed") == "finished", tab.explain()
        # and sends no answer
        assert '"action"' not in tab.page.text_content("#exchange")
        tab.close()


def test_a_progress_reporting_tool_shows_progress_and_logs(explorer: Explorer) -> None:
    page = explorer.page
    explorer.tool("count_slowly")
    page.get_by_label("steps (required)").fill("4")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert page.text_content("#call-progress-text") == "4 / 4 · step 4"
    assert page.get_attribute("#call-progress", "value") == "4"
    logs = page.locator("#call-logs li").all_text_contents()
    assert logs == [f"info: step {n} of 4" for n in range(1, 5)]
    explorer.screenshot(f"progress-{explorer.era}")


def test_an_eliciting_tool_shows_the_form_and_finishes_after_submit(explorer: Explorer) -> None:
    page = explorer.page
    explorer.tool("book_table")
    page.get_by_label("restaurant (required)").fill("Chez Flask")
    explorer.call()
    question = page.locator("form.question")
    question.wait_for(timeout=WAIT_MS)
    assert "How many guests at Chez Flask?" in question.text_content()
    explorer.screenshot(f"elicitation-{explorer.era}")
    question.get_by_label("Guests (required)").fill("4")
    question.get_by_label("Seating").select_option(label="terrace")
    question.get_by_role("button", name="Accept").click()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert page.text_content("#call-outcome .text-block") == "Booked Chez Flask for 4 (terrace)."
    assert page.locator("form.question").count() == 0


def test_an_elicitation_offers_titled_enums_as_selects(explorer: Explorer) -> None:
    """``oneOf``/``anyOf`` of ``{const, title}``: the titles are shown, the consts sent."""
    page = explorer.page
    explorer.tool("paint")
    explorer.call()
    question = page.locator("form.question")
    question.wait_for(timeout=WAIT_MS)
    question.get_by_label("Colour (required)").select_option(label="Green")
    question.get_by_role("button", name="Add item to Trims").click()
    question.get_by_label("Trims item 1 (required)").select_option(label="White")
    question.get_by_role("button", name="Accept").click()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert page.text_content("#call-outcome .text-block") == "Painted #00ff00 with #ffffff trims."


def test_a_call_cancelled_while_its_question_is_open_ends(explorer: Explorer) -> None:
    """Cancel while the page asks the user (2026-07-28: between two rounds of the call, with
    no request open) ends the call at once: its question goes and the page calls again."""
    page = explorer.page
    explorer.tool("book_table")
    page.get_by_label("restaurant (required)").fill("Chez Flask")
    explorer.call()
    page.locator("form.question").wait_for(timeout=WAIT_MS)
    calls = len([line for line in explorer.requests if line.endswith("/mcp")])
    page.click("#cancel-call")
    assert explorer.wait_state("^cancelled$|finished|failed") == "cancelled", explorer.explain()
    assert page.locator("form.question").count() == 0
    assert page.is_disabled("#cancel-call")
    assert page.is_enabled("#call-tool")
    if explorer.era >= "2026":  # no round answering the question was sent
        assert len([line for line in explorer.requests if line.endswith("/mcp")]) == calls
    page.get_by_label("restaurant (required)").fill("Chez Pallets")
    explorer.call()
    question = page.locator("form.question")
    question.get_by_label("Guests (required)").fill("2", timeout=WAIT_MS)
    question.get_by_role("button", name="Accept").click()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert page.text_content("#call-outcome .text-block") == "Booked Chez Pallets for 2 (any seat)."
    # another tool opened while a call's question is open: the call goes on unseen (its
    # result is dropped), so its question is answered at once as dismissed, {"action":
    # "cancel"} (2026-07-28: in one more round), not left waiting for the user
    page.get_by_label("restaurant (required)").fill("Chez Gone")
    explorer.call()
    page.locator("form.question").wait_for(timeout=WAIT_MS)
    rounds = page.text_content("#exchange").count('"inputResponses"')
    explorer.tool("wait_status")
    page.get_by_label("of", exact=True).fill("booking")
    assert wait_status(explorer) == "cancel", explorer.explain()
    if explorer.era >= "2026":
        assert page.text_content("#exchange").count('"inputResponses"') == rounds + 1


def wait_status(explorer: Explorer) -> str:
    """Call the open ``wait_status`` tool until its question is no longer ``asking``."""
    status = ""
    for _ in range(40):
        explorer.call()
        explorer.wait_state("finished|failed")
        status = explorer.page.text_content("#call-outcome .text-block") or ""
        if status != "asking":
            break
        explorer.page.wait_for_timeout(250)
    return status


def test_an_elicitation_accepted_as_shown_answers_its_defaults(explorer: Explorer) -> None:
    """A question's boolean shown checked (or not) from its default answers that value when
    accepted untouched, as its other fields answer theirs (SEP-1034)."""
    page = explorer.page
    explorer.tool("ask_with_defaults")
    explorer.call()
    question = page.locator("form.question")
    question.wait_for(timeout=WAIT_MS)
    assert question.get_by_label("Notify").is_checked()
    assert not question.get_by_label("Archive").is_checked()
    question.get_by_role("button", name="Accept").click()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    answered = {"notify": True, "archive": False, "guests": 2}
    assert json.loads(page.text_content("#call-structured"))["content"] == answered


def test_a_declined_elicitation_ends_with_the_tools_error(explorer: Explorer) -> None:
    page = explorer.page
    explorer.tool("book_table")
    page.get_by_label("restaurant (required)").fill("Chez Flask")
    explorer.call()
    page.locator("form.question").get_by_role("button", name="Decline").click()
    assert explorer.wait_state("finished with a tool error|failed") == "finished with a tool error"
    assert "declineed" in page.text_content("#call-outcome") or "decline" in page.text_content(
        "#call-outcome"
    )


def test_sampling_and_roots_are_answered_with_editable_stubs(explorer: Explorer) -> None:
    page = explorer.page
    explorer.tool("haiku")
    page.get_by_label("topic (required)").fill("Flask")
    explorer.call()
    roots = page.locator("form.question[aria-label='Roots request']")
    roots.get_by_label("Roots (JSON list)").fill('[{"uri": "file:///srv/app", "name": "app"}]')
    roots.get_by_role("button", name="Send roots").click()
    sampling = page.locator("form.question[aria-label='Sampling request']")
    assert "A haiku about Flask" in sampling.text_content()
    sampling.get_by_label("Answer text").fill("Small flask, big brew")
    sampling.get_by_label("Model name").fill("stub-1")
    sampling.get_by_role("button", name="Send answer").click()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert page.text_content("#call-outcome .text-block") == (
        "stub-1 wrote: Small flask, big brew (roots: file:///srv/app)"
    )
    dot = page.locator("#call-outcome img")
    assert (dot.get_attribute("src") or "").startswith("data:image/png;base64,iVBOR")
    assert page.evaluate("() => document.querySelector('#call-outcome img').naturalWidth") == 1


def test_a_cancelled_call_ends_on_the_page_and_on_the_server(explorer: Explorer) -> None:
    page = explorer.page
    explorer.tool("wait_forever")
    explorer.call()
    page.wait_for_selector(
        "#call-logs li:text-is('info: waiting to be cancelled')", timeout=WAIT_MS
    )
    page.click("#cancel-call")
    assert explorer.wait_state("^cancelled$|finished|failed") == "cancelled", explorer.explain()
    assert page.is_disabled("#cancel-call")
    # the handler saw the cancellation: ask the server through the page, a bounded number of times
    explorer.tool("wait_status")
    status = ""
    for _ in range(40):
        explorer.call()
        explorer.wait_state("finished|failed")
        status = page.text_content("#call-outcome .text-block") or ""
        if status != "running":
            break
        page.wait_for_timeout(250)
    assert status == "cancelled", explorer.explain()


def test_a_tool_requiring_a_task_runs_as_one_shows_its_status_and_asks(
    explorer: Explorer,
) -> None:
    """2025-11-25: params.task, tasks/get, tasks/result; 2026-07-28: the tasks extension."""
    page = explorer.page
    explorer.tool("build_report")
    if explorer.era >= "2026":  # no execution.taskSupport: the server decides, if asked
        assert page.locator("#tool-detail .badges li:text-matches('^tasks:')").count() == 0
        assert page.is_checked("#as-task") and not page.is_disabled("#as-task")
    else:
        assert "tasks: required" in page.text_content("#tool-detail .badges")
        assert page.is_checked("#as-task") and page.is_disabled("#as-task")
    page.get_by_label("rows (required)").fill("3")
    explorer.call()
    question = page.locator("form.question")
    question.wait_for(timeout=WAIT_MS)
    assert "Publish the report of 3 rows?" in question.text_content()
    page.wait_for_selector("#call-task-status:text-matches('^input_required')", timeout=WAIT_MS)
    assert page.text_content("#call-state") == "running"
    task_id = page.text_content("#call-task-id")
    assert task_id
    explorer.screenshot(f"task-{explorer.era}")
    question.get_by_label("Publish").check()
    question.get_by_role("button", name="Accept").click()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert page.text_content("#call-outcome .text-block") == "report of 3 rows published"
    history = page.locator("#call-task-history li").all_text_contents()
    assert history[0].startswith("working"), history
    assert any(line.startswith("input_required") for line in history), history
    assert history[-1].startswith("completed"), history
    assert page.text_content("#call-task-id") == task_id
    exchange = page.text_content("#call-exchange")
    assert '"method": "tasks/get"' in exchange
    if explorer.era >= "2026":
        assert '"resultType": "task"' in exchange
        assert '"method": "tasks/update"' in exchange
    else:
        assert '"method": "tasks/result"' in exchange
    page.click("#copy-curl")
    curl = page.input_value("#copy-output")
    assert ('"io.modelcontextprotocol/tasks":{}' if explorer.era >= "2026" else '"task":{}') in curl
    # another tool opened while the task asks: the question nobody sees is answered at once
    # as dismissed, {"action": "cancel"} (2025-11-25: on tasks/result's stream; 2026-07-28:
    # with tasks/update), so the task does not wait for it
    page.get_by_label("rows (required)").fill("1")
    explorer.call()
    page.locator("form.question").wait_for(timeout=WAIT_MS)
    explorer.tool("wait_status")
    page.get_by_label("of", exact=True).fill("report")
    assert wait_status(explorer) == "cancel", explorer.explain()


def test_a_tool_with_optional_tasks_runs_as_one_when_asked(explorer: Explorer) -> None:
    page = explorer.page
    explorer.tool("echo_later")
    if explorer.era >= "2026":  # the extension is declared unless the box is unticked
        assert page.locator("#tool-detail .badges li:text-matches('^tasks:')").count() == 0
        page.get_by_label("Run as a task").uncheck()
    else:
        assert "tasks: optional" in page.text_content("#tool-detail .badges")
    assert not page.is_checked("#as-task") and not page.is_disabled("#as-task")
    page.get_by_label("text (required)").fill("hi")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert page.text_content("#call-outcome .text-block") == "echo: hi"
    assert page.is_hidden("#call-task-id")
    assert '"method": "tasks/get"' not in page.text_content("#call-exchange")
    page.get_by_label("Run as a task").check()
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert page.text_content("#call-outcome .text-block") == "echo: hi"
    assert page.text_content("#call-task-id")
    assert page.text_content("#call-task-status") == "completed"
    assert '"method": "tasks/get"' in page.text_content("#call-exchange")


def test_a_task_is_cancelled_on_the_page_and_on_the_server(explorer: Explorer) -> None:
    page = explorer.page
    explorer.tool("wait_as_task")
    explorer.call()
    page.wait_for_selector("#call-task-status:text-is('working · waiting')", timeout=WAIT_MS)
    page.click("#cancel-call")
    assert explorer.wait_state("^cancelled$|finished|failed") == "cancelled", explorer.explain()
    assert page.text_content("#call-task-status").startswith("cancelled")
    assert page.is_disabled("#cancel-call")
    assert '"method": "tasks/cancel"' in page.text_content("#call-exchange")
    explorer.tool("wait_status")
    page.get_by_label("of", exact=True).fill("task")
    status = ""
    for _ in range(40):
        explorer.call()
        explorer.wait_state("finished|failed")
        status = page.text_content("#call-outcome .text-block") or ""
        if status != "running":
            break
        page.wait_for_timeout(250)
    assert status == "cancelled", explorer.explain()


def test_an_app_view_renders_and_calls_its_app_only_tool_through_the_page(
    explorer: Explorer,
) -> None:
    page = explorer.page
    explorer.tool("bump")
    assert "app only" in page.text_content("#tool-detail .badges")
    explorer.tool("counter")
    assert "view: ui://demo/counter" in page.text_content("#tool-detail .badges")
    page.get_by_label("start").fill("5")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    # counter gives structuredContent only to a client declaring the Apps extension
    assert json.loads(page.text_content("#call-structured")) == {"value": 5}
    view = page.frame_locator("#call-view iframe").frame_locator("iframe")
    view.locator("#count:text-is('5')").wait_for(timeout=WAIT_MS)
    view.locator("#bump").click()
    view.locator("#count:text-is('6')").wait_for(timeout=WAIT_MS)
    assert view.locator("#said").text_content() == "bumped to 6"
    # an app-only tool that requires a task: the page calls it as one for the view
    view.locator("#bump-later").click()
    view.locator("#count:text-is('16')").wait_for(timeout=WAIT_MS)
    assert view.locator("#said").text_content() == "bumped to 16"
    # an app-only tool that asks the user: its question shows with the view, on the Tools
    # tab (it went to the hidden Server tab, and the view's call waited for ever)
    view.locator("#bump-asked").click()
    question = page.locator("#call-view form.question")
    question.get_by_label("By (required)").fill("4", timeout=WAIT_MS)
    question.get_by_role("button", name="Accept").click()
    view.locator("#count:text-is('20')").wait_for(timeout=WAIT_MS)
    assert page.locator("form.question").count() == 0
    log = page.locator("#view-log li").all_text_contents()
    assert "view initialized" in log
    assert 'view calls bump {"by":1}' in log
    assert any(line.startswith("task ") and line.endswith(": completed") for line in log), log
    # the sandbox proxy was served with the spec's restrictive policy (no _meta.ui.csp)
    frame = page.query_selector("#call-view iframe")
    assert frame.get_attribute("sandbox") == "allow-scripts allow-forms"
    assert "csp=" not in (frame.get_attribute("src") or "")
    page.locator("#call-run details.raw").scroll_into_view_if_needed()
    explorer.screenshot(f"app-view-{explorer.era}", full_page=False)
    # the same question left open when the user opens another tool is dismissed, as a
    # call's own is, not left waiting until the next call tears the view down
    view.locator("#bump-asked").click()
    question.wait_for(timeout=WAIT_MS)
    explorer.tool("wait_status")
    page.get_by_label("of", exact=True).fill("bump")
    assert wait_status(explorer) == "cancel", explorer.explain()


def test_a_template_view_gets_the_csp_permissions_and_border_its_meta_ui_asks(
    explorer: Explorer,
) -> None:
    """``mcp.ui_template(..., csp=, permissions=, domain=, prefers_border=False)``."""
    page = explorer.page
    explorer.tool("note")
    assert "view: ui://demo/note" in page.text_content("#tool-detail .badges")
    page.get_by_label("text (required)").fill("Buy milk")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    view = page.frame_locator("#call-view iframe").frame_locator("iframe")
    view.locator("#note:text-is('Buy milk')").wait_for(timeout=WAIT_MS)
    frame = page.query_selector("#call-view iframe")
    assert "bordered" not in (frame.get_attribute("class") or "")  # prefersBorder: false
    assert frame.get_attribute("allow") == "clipboard-write"
    inner = frame.content_frame().query_selector("iframe")
    assert inner.get_attribute("allow") == "clipboard-write"
    src = frame.get_attribute("src") or ""
    asked = json.loads(parse_qs(urlsplit(src).query)["csp"][0])
    assert asked == {
        "connectDomains": ["https://api.example.com"],
        "resourceDomains": ["https://cdn.example.com"],
    }
    # the proxy's policy is the one the spec tells a host to build from _meta.ui.csp
    policy = page.request.get(urljoin(explorer.origin + "/", src)).headers[
        "content-security-policy"
    ]
    assert "connect-src 'self' https://api.example.com" in policy
    assert "script-src 'self' 'unsafe-inline' https://cdn.example.com" in policy
    assert "frame-src 'none'" in policy
    log = page.locator("#view-log li").all_text_contents()
    assert any("explorer-demo.example.com" in line for line in log), log
    assert "Permissions asked by the view: clipboard-write" in log


def test_a_view_without_meta_ui_in_its_read_falls_back_to_its_list_entry(
    explorer: Explorer,
) -> None:
    """The Apps spec: hosts check both, preferring the content item's ``_meta.ui`` and
    falling back to the ``resources/list`` entry's."""
    page = explorer.page
    explorer.tool("listed")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    page.wait_for_selector("#call-view iframe", timeout=WAIT_MS)
    frame = page.query_selector("#call-view iframe")
    assert "bordered" not in (frame.get_attribute("class") or "")
    assert frame.get_attribute("allow") == "clipboard-write"
    src = frame.get_attribute("src") or ""
    asked = json.loads(parse_qs(urlsplit(src).query)["csp"][0])
    assert asked == {"connectDomains": ["https://listed.example.com"]}


def test_the_view_cannot_reach_the_network_or_the_page(explorer: Explorer) -> None:
    page = explorer.page
    explorer.probes_csp = True
    explorer.tool("counter")
    explorer.call()
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    view_frame = page.frame_locator("#call-view iframe").frame_locator("iframe")
    view_frame.locator("#count:text-is('0')").wait_for(timeout=WAIT_MS)
    frame = page.query_selector("#call-view iframe").content_frame().child_frames[0]
    probe = frame.evaluate(
        """async (url) => {
          const violations = [];
          document.addEventListener(
            "securitypolicyviolation", (e) => violations.push(e.violatedDirective));
          let fetched;
          try { await fetch(url); fetched = true; } catch (error) { fetched = false; }
          let parentDocument;
          try { parentDocument = !!window.parent.parent.document.body; }
          catch (error) { parentDocument = false; }
          await new Promise((resolve) => setTimeout(resolve, 50));
          return { fetched, violations, parentDocument, origin: window.origin };
        }""",
        explorer.origin + "/mcp",
    )
    assert probe["fetched"] is False
    assert "connect-src" in probe["violations"]
    assert probe["parentDocument"] is False
    assert probe["origin"] == "null"


def test_keyboard_only_use_and_labels_on_every_field(explorer: Explorer) -> None:
    page = explorer.page

    def tab_to(selector: str) -> None:
        for _ in range(60):
            if page.evaluate("(s) => document.activeElement.matches(s)", selector):
                return
            page.keyboard.press("Tab")
        raise AssertionError(f"Tab never reached {selector}")

    tab_to("button.tab[data-section=tools]")
    page.keyboard.press("Enter")
    tab_to("#tool-list li:first-child button")
    page.keyboard.press("Enter")  # add
    tab_to("input[name=a]")
    page.keyboard.type("20")
    page.keyboard.press("Tab")
    page.keyboard.type("22")
    page.keyboard.press("Enter")  # submits the form
    assert explorer.wait_state("finished|failed") == "finished", explorer.explain()
    assert json.loads(page.text_content("#call-structured")) == {"result": 42}
    explorer.tool("describe_trip")
    unlabelled = page.evaluate(
        """() => Array.from(document.querySelectorAll("input, select, textarea"))
          .filter((field) => !field.hidden && !field.closest("[hidden]"))
          .filter((field) => !(field.labels && field.labels.length))
          .filter((field) => !field.getAttribute("aria-label"))
          .map((field) => field.outerHTML)"""
    )
    assert unlabelled == []


def test_a_resource_template_completes_its_variable_and_a_prompt_renders(
    explorer: Explorer,
) -> None:
    page = explorer.page
    page.click("button.tab[data-section=resources]")
    page.click("#resource-list button:has-text('weather (template)')")
    city = page.get_by_label("city")
    city.fill("P")
    page.wait_for_selector("input[data-completed-for=P]", timeout=WAIT_MS)
    options = page.eval_on_selector_all("datalist option", "(nodes) => nodes.map((n) => n.value)")
    assert options == ["Paris", "Porto", "Prague"]
    city.fill("Porto")
    page.click("#template-form button[type=submit]")
    page.wait_for_selector("#resource-contents .text-block", timeout=WAIT_MS)
    assert page.text_content("#resource-contents .text-block") == "Sunny in Porto."
    # RFC 6570: a value is percent-encoded but for unreserved characters ("'" and "(" too)
    city.fill("Porto's (old town)")
    page.click("#template-form button[type=submit]")
    page.wait_for_selector("#read-state:text-matches('finished|failed')", timeout=WAIT_MS)
    text = page.text_content("#resource-contents")
    assert page.text_content("#read-state") == "finished", text
    assert page.text_content("#resource-contents .text-block") == "Sunny in Porto's (old town)."
    # RFC 6570 level 4, as the server matches it: {;x} names its value, {v:3} keeps three
    # characters, {+path} keeps reserved characters and percent-encoded triplets, an
    # exploded {?tag*} takes a list (a value a line) and an empty field is left out
    page.click("#resource-list button:has(.item-name:text-is('probe (template)'))")
    page.get_by_label("v", exact=True).fill("Lisbon")
    page.get_by_label("x", exact=True).fill("1 2")
    page.get_by_label("path", exact=True).fill("a/b%2Fc [d] 50%")
    page.get_by_label("q", exact=True).fill("x&y")
    page.get_by_label("tag").fill("a b\nc&d")
    page.click("#template-form button[type=submit]")
    page.wait_for_selector("#read-state:text-matches('finished|failed')", timeout=WAIT_MS)
    text = page.text_content("#resource-contents")
    assert page.text_content("#read-state") == "finished", text
    assert page.text_content("#resource-contents .text-block") == (
        "v=Lis x=1 2 y=- path=a/b/c [d] 50% q=x&y tag=['a b', 'c&d']"
    )
    page.click("button.tab[data-section=prompts]")
    page.click("#prompt-list button:has-text('greet')")
    # a prompt's argument is completed as a template's variable is
    page.get_by_label("name (required)").fill("A")
    page.wait_for_selector("#prompt-form input[data-completed-for=A]", timeout=WAIT_MS)
    options = page.eval_on_selector_all(
        "#prompt-form datalist option", "(nodes) => nodes.map((n) => n.value)"
    )
    assert options == ["Ada", "Alan"]
    page.get_by_label("name (required)").fill("Ada")
    page.click("#prompt-form button[type=submit]")
    page.wait_for_selector("#prompt-messages .text-block", timeout=WAIT_MS)
    assert page.text_content("#prompt-messages .text-block") == "Say hello to Ada."
    page.click("button.tab[data-section=skills]")
    assert page.text_content("#skills") == "This server does not serve skills."
    page.click("button.tab[data-section=exchange]")
    assert re.search(r'"method": "(initialize|server/discover)"', page.text_content("#exchange"))


@pytest.mark.parametrize("kind", ["resource template", "prompt"])
def test_only_the_last_read_or_prompt_asked_is_shown(explorer: Explorer, kind: str) -> None:
    """Asked again before the first answer came, the page shows the last one's answer only,
    not also (or instead) the first one's, which arrives after it. Each says it runs and
    can be cancelled."""
    page = explorer.page
    if kind == "prompt":
        page.click("button.tab[data-section=prompts]")
        page.click("#prompt-list button:has(.item-name:text-is('echo_after'))")
        form, shown = page.locator("#prompt-form"), page.locator("#prompt-messages")
        text, seconds = form.get_by_label("text (required)"), form.get_by_label("seconds")
    else:
        page.click("button.tab[data-section=resources]")
        page.click("#resource-list button:has(.item-name:text-is('echo_after (template)'))")
        form, shown = page.locator("#template-form"), page.locator("#resource-contents")
        text, seconds = form.get_by_label("text"), form.get_by_label("seconds")
    text.fill("first")
    seconds.fill("2")
    form.locator("button[type=submit]").click()
    text.fill("second")
    seconds.fill("0")
    form.locator("button[type=submit]").click()
    shown.get_by_text("Echo second").wait_for(timeout=WAIT_MS)
    # the first answer arrives: it is in the exchange log, not in what the page shows
    page.wait_for_function(
        "() => document.getElementById('exchange').textContent.includes('Echo first')",
        timeout=WAIT_MS,
    )
    assert "Echo first" not in shown.text_content()
    assert shown.get_by_text("Echo second").count() == 1
    # each says it runs and has a Cancel, as a tool call
    state, cancel = (
        ("#prompt-state", "#cancel-prompt") if kind == "prompt" else ("#read-state", "#cancel-read")
    )
    assert page.text_content(state) == "finished"
    assert page.locator(cancel).is_disabled()
    text.fill("slow")
    seconds.fill("3")
    form.locator("button[type=submit]").click()
    page.wait_for_selector(f"{state}:text-is('running')", timeout=WAIT_MS)
    page.click(cancel)
    page.wait_for_selector(f"{state}:text-is('cancelled')", timeout=WAIT_MS)
    assert page.locator(cancel).is_disabled()
    if explorer.era == "2025-11-25":
        assert '"method": "notifications/cancelled"' in page.text_content("#exchange")

        # a notification the server does not accept (202) is an error the page shows:
        # here it goes without its session id, which the server refuses with a 400
        def sessionless(route: t.Any) -> None:
            headers = dict(route.request.headers)
            if '"method":"notifications/cancelled"' in (route.request.post_data or ""):
                headers = {k: v for k, v in headers.items() if k.lower() != "mcp-session-id"}
            route.continue_(headers=headers)

        page.route("**/mcp", sessionless)
        form.locator("button[type=submit]").click()
        page.wait_for_selector(f"{state}:text-is('running')", timeout=WAIT_MS)
        page.click(cancel)
        refused = shown.locator(".error:has-text('HTTP 400')")
        refused.wait_for(timeout=WAIT_MS)
        assert "missing Mcp-Session-Id" in refused.text_content()
        page.unroute("**/mcp", sessionless)
        page.wait_for_selector(f"{state}:text-is('cancelled')", timeout=WAIT_MS)
    seconds.fill("0")
    form.locator("button[type=submit]").click()
    page.wait_for_selector(f"{state}:text-is('finished')", timeout=WAIT_MS)
    assert shown.locator(".text-block").all_text_contents() == ["Echo slow"]


def test_only_the_last_prompt_asked_shows_its_questions(explorer: Explorer) -> None:
    """A question of a ``prompts/get`` that a later one replaced does not show: the
    explorer answers it ``{"action": "cancel"}``, so that the server does not wait for it."""
    page = explorer.page
    page.click("button.tab[data-section=prompts]")
    page.click("#prompt-list button:has(.item-name:text-is('ask_after'))")
    form, shown = page.locator("#prompt-form"), page.locator("#prompt-messages")
    form.get_by_label("question (required)").fill("First?")
    form.get_by_label("seconds").fill("2")
    form.locator("button[type=submit]").click()
    form.get_by_label("question (required)").fill("Second?")
    form.get_by_label("seconds").fill("0")
    form.locator("button[type=submit]").click()
    shown.locator("form.question:has-text('Second?')").wait_for(timeout=WAIT_MS)
    # the first prompt's question arrives: in the exchange log, not in the prompt box
    page.wait_for_function(
        "() => document.getElementById('exchange').textContent.includes('Answer First?')",
        timeout=WAIT_MS,
    )
    page.wait_for_timeout(500)
    assert shown.locator("form.question").count() == 1
    assert shown.get_by_text("First?").count() == 0
    # answered as dismissed, so that the server does not wait for it
    page.wait_for_function(
        "() => document.getElementById('exchange').textContent.includes('Asked First?: cancel')",
        timeout=WAIT_MS,
    )
    shown.get_by_role("button", name="Accept").click()
    shown.get_by_text("Asked Second?: accept").wait_for(timeout=WAIT_MS)


@pytest.mark.parametrize(
    ("mode", "status"), [("off", 404), ("guarded", 403)], ids=["off", "access-check-says-no"]
)
def test_the_page_is_refused(browser: t.Any, mode: str, status: int) -> None:
    with start_server(APP, "gevent", env={"MCP_TEST_EXPLORER": mode}) as served:
        tab = Explorer(browser, served, "2026-07-28")
        response = tab.page.goto(f"{tab.origin}/_mcp/explorer/")
        assert response.status == status
        if mode == "guarded":
            assert "MCP_EXPLORER_ACCESS" in tab.page.text_content("body")
            assert tab.page.goto(f"{tab.origin}/_mcp/explorer/static/explorer.js").status == 403
        tab.context.close()
        if mode == "guarded":  # the access check says yes: the page works outside debug
            allowed = Explorer(browser, served, "2026-07-28", cookie=True)
            assert allowed.open().status == 200
            assert "Explorer demo" in allowed.page.text_content("#server-name")
            allowed.close()


def test_a_view_on_a_sandbox_origin_of_its_own(browser: t.Any) -> None:
    """With MCP_EXPLORER_SANDBOX_ORIGIN the proxy runs there, with allow-same-origin."""
    port = free_port()
    sandbox = f"http://localhost:{port}"
    env = {"MCP_TEST_EXPLORER": "debug", "MCP_TEST_EXPLORER_SANDBOX": sandbox}
    with start_server(APP, "gevent", env=env, port=port) as served:
        tab = Explorer(browser, served, "2026-07-28", also=sandbox)
        tab.open()
        tab.tool("counter")
        tab.page.get_by_label("start").fill("1")
        tab.call()
        assert tab.wait_state("finished|failed") == "finished", tab.explain()
        frame = tab.page.query_selector("#call-view iframe")
        assert frame.get_attribute("sandbox") == "allow-scripts allow-same-origin allow-forms"
        assert (frame.get_attribute("src") or "").startswith(f"{sandbox}/_mcp/explorer/sandbox")
        view = tab.page.frame_locator("#call-view iframe").frame_locator("iframe")
        view.locator("#count:text-is('1')").wait_for(timeout=WAIT_MS)
        view.locator("#bump").click()
        view.locator("#count:text-is('2')").wait_for(timeout=WAIT_MS)
        assert any(url.startswith(sandbox) for url in tab.requests)
        # the view itself stays on an opaque origin: the sandbox origin is the app's too
        inner = frame.content_frame().child_frames[0]
        assert inner.evaluate("() => window.origin") == "null"
        tab.close()


def test_a_sandbox_origin_that_is_the_pages_own_is_not_trusted(browser: t.Any) -> None:
    """The page opened on MCP_EXPLORER_SANDBOX_ORIGIN: the proxy still gets another origin.

    The Apps specification wants the host and the sandbox on different origins; a proxy
    framed with allow-same-origin on the page's own origin could reach the page.
    """
    port = free_port()
    env = {"MCP_TEST_EXPLORER": "debug", "MCP_TEST_EXPLORER_SANDBOX": f"http://127.0.0.1:{port}"}
    with start_server(APP, "gevent", env=env, port=port) as served:
        tab = Explorer(browser, served, "2026-07-28")
        tab.open()
        tab.tool("counter")
        tab.page.get_by_label("start").fill("3")
        tab.call()
        assert tab.wait_state("finished|failed") == "finished", tab.explain()
        view = tab.page.frame_locator("#call-view iframe").frame_locator("iframe")
        view.locator("#count:text-is('3')").wait_for(timeout=WAIT_MS)
        frame = tab.page.query_selector("#call-view iframe")
        assert frame.get_attribute("sandbox") == "allow-scripts allow-forms"
        proxy = frame.content_frame()
        assert proxy.evaluate("() => window.origin") == "null"
        reach = "() => { try { return !!parent.document.body; } catch (e) { return false; } }"
        assert proxy.evaluate(reach) is False
        tab.close()


@pytest.mark.parametrize("era", ERAS)
def test_skills_are_listed_when_served(browser: t.Any, era: str) -> None:
    """The skills app of the Skills tests (``tests/_apps/skills.py``), in debug."""
    env = {"SKILLS_DEBUG": "1", "SKILLS_WATCH_INTERVAL": "30"}
    with start_server("tests._apps.skills:app", "gevent", env=env) as served:
        tab = Explorer(browser, served, era)
        tab.open()
        assert "io.modelcontextprotocol/skills" in tab.page.text_content("#server-extensions")
        tab.page.click("button.tab[data-section=skills]")
        names = tab.page.locator("#skills article h3").all_text_contents()
        assert {"daily", "flask-deploy", "incident-triage"} <= set(names), names
        daily = tab.page.locator("#skills article:has(h3:text-is('daily'))")
        assert "Summarise today's operations report" in daily.text_content()
        daily.get_by_role("button", name="Read skill://reports/daily/SKILL.md").click()
        daily.locator(".skill-contents .text-block").wait_for(timeout=WAIT_MS)
        assert "data/summary.csv" in daily.locator(".skill-contents").text_content()
        tab.close()


@pytest.mark.parametrize("era", ERAS)
def test_a_bearer_token_opens_an_endpoint_with_authorization(browser: t.Any, era: str) -> None:
    """The token field: sent as Authorization, kept out of storage, URLs and copy as curl."""
    from tests._apps.explorer_auth import TOKEN

    with start_server("tests._apps.explorer_auth:app", "gevent") as served:
        tab = Explorer(browser, served, era)
        page = tab.page
        page.goto(f"{tab.origin}/_mcp/explorer/?era={era}")
        page.wait_for_selector("body[data-connected=failed]", state="attached", timeout=WAIT_MS)
        status = page.text_content("#status")
        assert "HTTP 401" in status and "enter a bearer token" in status, status
        page.get_by_label("Bearer token").fill(TOKEN)
        page.click("#connect")
        page.wait_for_selector(f"body[data-connected='{era}']", state="attached", timeout=WAIT_MS)
        tab.tool("whoami")
        tab.call()
        assert tab.wait_state("finished|failed") == "finished", tab.explain()
        assert page.text_content("#call-outcome .text-block") == "you are ada"
        page.click("#copy-curl")
        curl = page.input_value("#copy-output")
        assert '-H "Authorization: Bearer $MCP_TOKEN"' in curl and TOKEN not in curl
        stored = page.evaluate("() => localStorage.length + sessionStorage.length")
        assert stored == 0
        assert TOKEN not in page.content()
        assert not [url for url in tab.requests if TOKEN in url]
        tab.close()
