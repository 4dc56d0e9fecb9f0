"""The notebooks as a person sees them: Notebook 7 in headless Chromium, Run All everywhere, then the chat.

A Jupyter server runs on 127.0.0.1 (a free port, a token) from a scratch copy of notebooks/, with the test
environment of tests/workshop_env.py (offline, frozen clock, no prompt). Playwright drives Debian's Chromium
(tests/setup_browser.sh installs both; Playwright's own browser download is not used). For each notebook:
Run All, wait for the kernel to be idle, then check what is on screen: no error output, no traceback, no
stderr text the committed notebook does not have, no broken widget, every plot drawn as an image. In lesson 11
the chat window is used with the keyboard and the mouse. Screenshots go to tests/artifacts/ (git ignores it);
with WORKSHOP_UPDATE_SCREENSHOTS=1 the chat window's picture is written to notebooks/images/chat_window.png.

Console errors from Jupyter itself are filtered by the exact patterns in NOISE and counted; any other console
error, or an uncaught page error, fails the test. Without Chromium or Playwright the tests are skipped, unless
WORKSHOP_REQUIRE_BROWSER=1 (tests/run.sh sets it).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

import workshop_env

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
SCREENSHOT = ROOT / "notebooks" / "images" / "chat_window.png"  # shown in the README and in notebook 11
CHROMIUM = os.environ.get("WORKSHOP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
STEP_TIMEOUT_MS = 60_000  # a generous ceiling for one step on a busy 2-core machine; no assertion on time

# Console errors that come from Jupyter itself or from pages reaching outside this machine, by exact pattern.
NOISE = {
    # The Colab badge at the top of each notebook points at an external image; the test blocks every
    # request that leaves 127.0.0.1, and Chromium logs the blocked load.
    "blocked external resource": re.compile(r"^Failed to load resource: net::ERR_FAILED$"),
    # Notebook 7's keyboard-shortcut plugin reads the schema of a plugin that is not loaded yet, now and then.
    "shortcut settings race": re.compile(r"^uncaught page error: TypeError: Cannot read properties of "
                                         r"undefined \(reading 'schema'\)\n"
                                         r"    at \S+/static/notebook/notebook_core\."),
}

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # a learner running pytest without tests/run.sh
    sync_playwright = None


def _missing() -> str | None:
    if sync_playwright is None:
        return "Playwright is not installed (bash tests/setup_browser.sh installs it)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"Chromium is not at {CHROMIUM} (bash tests/setup_browser.sh installs Debian's chromium)"
    return None


def _require_browser() -> None:
    reason = _missing()
    if reason is None:
        return
    if os.environ.get("WORKSHOP_REQUIRE_BROWSER") == "1":
        pytest.fail(f"WORKSHOP_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(f"browser test skipped: {reason}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Console:
    """Every console message and page error, with Jupyter's own noise filtered and counted."""

    def __init__(self):
        self.filtered: Counter[str] = Counter()
        self.warnings = 0
        self.errors: list[str] = []
        self.external: list[str] = []

    def on_console(self, message) -> None:
        if message.type == "warning":
            self.warnings += 1
        if message.type != "error":
            return
        url = message.location.get("url", "") if message.location else ""
        if url and url not in self.external and "Failed to load resource" in message.text:
            self.errors.append(f"{message.text} ({url})")  # a resource of this machine's server failed
        else:
            self._keep(message.text, url)

    def on_page_error(self, error) -> None:
        self._keep(f"uncaught page error: {error.stack or error}", "")

    def _keep(self, text: str, url: str) -> None:
        for name, pattern in NOISE.items():
            if pattern.search(text):
                self.filtered[name] += 1
                return
        self.errors.append(f"{text} ({url})" if url else text)

    def take_errors(self) -> list[str]:
        errors, self.errors = self.errors, []
        return errors


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory):
    """A Notebook 7 server on a scratch copy of notebooks/; stopped by pid at the end."""
    _require_browser()
    scratch = tmp_path_factory.mktemp("browser")
    work = scratch / "notebooks"
    shutil.copytree(ROOT / "notebooks", work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    env = dict(os.environ, **workshop_env.SETTINGS, JUPYTER_CONFIG_DIR=str(scratch / "config"),
               JUPYTER_RUNTIME_DIR=str(scratch / "runtime"), IPYTHONDIR=str(scratch / "ipython"))
    env.pop("NVIDIA_API_KEY", None)
    port, token = _free_port(), os.urandom(16).hex()
    log = open(scratch / "server.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "notebook", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
         "--ServerApp.open_browser=False"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # until the server answers (a few seconds)
            if server.poll() is not None:
                pytest.fail(f"the Jupyter server exited with {server.returncode}; "
                            f"see {scratch / 'server.log'}")
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield {"base": base, "token": token, "work": work}
    finally:
        os.kill(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def browser(jupyter):
    """Debian's Chromium with a fresh profile (Playwright gives every launch a new user data dir)."""
    ARTIFACTS.mkdir(exist_ok=True)
    console = Console()
    started = time.monotonic()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        context = chromium.new_context(viewport={"width": 1200, "height": 900})

        def only_this_machine(route):
            if route.request.url.startswith(jupyter["base"]):
                return route.continue_()
            console.external.append(route.request.url)
            return route.abort()

        context.route("**/*", only_this_machine)
        yield context, console
        context.close()
        chromium.close()
    total = sum(console.filtered.values())
    print(f"\nbrowser: {time.monotonic() - started:.1f} s; console errors filtered as Jupyter noise: {total} "
          f"{dict(console.filtered)}; console warnings seen: {console.warnings}; "
          f"external requests blocked: {len(console.external)} {sorted(set(console.external))}")


def _open(context, console, jupyter, name):
    page = context.new_page()
    page.on("console", console.on_console)
    page.on("pageerror", console.on_page_error)
    page.set_default_timeout(STEP_TIMEOUT_MS)
    page.goto(f"{jupyter['base']}/notebooks/{name}?token={jupyter['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    _wait_idle(page)
    return page


def _wait_idle(page):
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")


STARTED = """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                   .some(p => !/^\\[ \\]:?$/.test(p.textContent.trim()))"""


def _run_all(page):
    # Right after a notebook opens, its commands may still be disabled (the notebook is not yet the current
    # widget); a disabled menu item ignores the click, so open the menu again until Run All has started.
    for _ in range(20):
        page.get_by_role("menuitem", name="Run", exact=True).click()
        item = page.get_by_role("menuitem", name="Run All Cells", exact=True)
        if item.get_attribute("aria-disabled") != "true":
            item.click()
            try:
                page.wait_for_function(STARTED, timeout=5_000)
                break
            except Exception:  # noqa: BLE001 - the click did not start a run: try the menu again
                continue
        page.keyboard.press("Escape")
        page.wait_for_timeout(500)
    else:
        raise AssertionError("Run > Run All Cells never started a run")
    try:
        _wait_all_ran(page)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "run-all-timeout.png"), full_page=True)
        waiting = page.evaluate("""() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                                         .map(p => p.textContent).filter(t => t.includes('*'))""")
        raise AssertionError(f"Run All did not finish within {STEP_TIMEOUT_MS / 1000:.0f} s; "
                             f"prompts: {waiting}") from None
    assert page.locator(".jp-Stdin").count() == 0, \
        f"the notebook stopped at a prompt: {page.locator('.jp-Stdin').first.inner_text()!r}"
    _wait_idle(page)
    unrun = page.evaluate("""() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                                   .filter(p => !/\\[\\d+\\]/.test(p.textContent)).length""")
    tracebacks = [t for t in page.locator(".jp-OutputArea-output").all_text_contents() if "Traceback" in t]
    assert unrun == 0, f"Run All stopped with {unrun} code cells not run; {tracebacks[:1]}"


def _wait_all_ran(page):
    # Run All marks every code cell "[*]" at once; it is over when none is left waiting, or a prompt for input
    # appears. (It stops early at an error, leaving "[ ]" cells: the checks after this report the error.)
    page.wait_for_function("""() => !!document.querySelector('.jp-Stdin') ||
        ![...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
            .some(p => p.textContent.includes('*'))""")


def _committed(name):
    notebook = json.loads((ROOT / "notebooks" / name).read_text(encoding="utf-8"))
    outputs = [o for cell in notebook["cells"] for o in cell.get("outputs", [])]
    stderr = {"".join(o["text"]).strip() for o in outputs if o.get("name") == "stderr"}
    images = sum("image/png" in o.get("data", {}) for o in outputs)
    widgets = sum("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
    return stderr, images, widgets


def _check_outputs(page, name):
    stderr, images, widgets = _committed(name)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
    assert errors.count() == 0, f"{name}: error output on screen: {errors.first.text_content()[:2000]}"
    tracebacks = [t for t in page.locator(".jp-OutputArea-output").all_text_contents() if "Traceback" in t]
    assert not tracebacks, f"{name}: a traceback on screen: {tracebacks[0][:3000]}"
    # text_content, not inner_text: cells scrolled out of view are not laid out, and have no inner text.
    stderr_outputs = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    shown = [t.strip() for t in stderr_outputs.all_text_contents()]
    unexpected = [t for t in shown if t not in stderr or "Traceback" in t]
    assert not unexpected, f"{name}: stderr output the committed notebook does not have: {unexpected}"
    body = page.locator(".jp-Notebook").text_content()
    assert "Error displaying widget" not in body, f"{name}: a widget failed to render"
    # Plots and widgets are drawn a moment after their output arrives: wait for as many as were committed.
    counts = """() => [[...document.querySelectorAll('.jp-RenderedImage img')]
                         .filter(img => img.complete && img.naturalWidth > 0).length,
                       document.querySelectorAll('.jp-OutputArea .jupyter-widgets.widget-vbox').length]"""
    try:
        page.wait_for_function(f"() => JSON.stringify(({counts})()) === '{json.dumps([images, widgets])}'",
                               timeout=20_000)
    except Exception:  # noqa: BLE001 - the assertions below say what is missing
        pass
    drawn, shown_widgets = page.evaluate(counts)
    assert drawn == images, f"{name}: {drawn} plots drawn as images, the committed notebook has {images}"
    assert shown_widgets == widgets, \
        f"{name}: {shown_widgets} widgets on screen, the committed notebook has {widgets}"


@pytest.mark.parametrize("name", [n for n in NOTEBOOKS if not n.startswith("11_")])
def test_run_all_shows_no_error_and_draws_every_plot(browser, jupyter, name):
    context, console = browser
    started = time.monotonic()
    page = _open(context, console, jupyter, name)
    opened = time.monotonic()
    _run_all(page)
    print(f"\n{name}: opened in {opened - started:.1f} s, Run All in {time.monotonic() - opened:.1f} s",
          end="")
    _check_outputs(page, name)
    page.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}.png"), full_page=True)
    errors = console.take_errors()
    assert not errors, f"{name}: console errors: {errors}"
    page.close()


QUESTIONS = ["When does the AI club meet?", "How many days until that?", "Where can I print a poster?",
             "When is the library open?", "And when are the faculty office hours?",
             "How many days until that?", "When does the robotics club meet?", "How many days until that?",
             "Where can I print a poster?", "When does the AI club meet?"]


class Chat:
    """The chat window of lesson 11 as a person uses it."""

    def __init__(self, page):
        self.page = page
        self.window = page.locator(".jp-OutputArea-output .widget-vbox", has=page.locator(".chat-transcript"))
        assert self.window.count() == 1, "the chat window is not on screen"
        self.entry = self.window.locator("textarea, input[type='text']")  # the box (a one-row textarea)
        self.box = self.window.locator(".chat-transcript")
        self.bubbles = self.box.locator(":scope > div > div")
        self.status = self.window.locator(".widget-html").nth(1)

    def button(self, name):
        return self.window.get_by_role("button", name=name, exact=True)

    def messages(self):
        return self.bubbles.count() if self.box.locator("i").count() == 0 else 0

    def settle(self, messages):
        """Wait until the transcript holds ``messages`` bubbles and the kernel has finished the action."""
        self.page.wait_for_function(
            """([n]) => { const box = document.querySelector('.chat-transcript');
                          const empty = box && box.querySelector(':scope > div > i');
                          const count = empty ? 0 : box.querySelectorAll(':scope > div > div').length;
                          return box && count === n; }""",
            arg=[messages])
        _wait_idle(self.page)

    def ask(self, text, how="enter"):
        before = self.messages()
        self.entry.fill(text)
        if how == "enter":
            self.entry.press("Enter")
        else:
            self.button("Send").click()
        self.settle(before + 2)
        return self.bubbles.last.inner_text()

    def newest_is_visible(self):
        """The newest bubble lies inside the transcript's visible box and inside the browser's viewport."""
        return self.page.evaluate("""() => {
            const box = document.querySelector('.chat-transcript');
            const bubbles = box.querySelectorAll(':scope > div > div');
            const last = bubbles[bubbles.length - 1].getBoundingClientRect();
            const frame = box.getBoundingClientRect();
            const inBox = last.top >= frame.top - 1 && last.bottom <= frame.bottom + 1;
            const inView = last.top >= 0 && last.bottom <= window.innerHeight;
            return {inBox, inView, scrolls: box.scrollHeight > box.clientHeight};
        }""")


def test_lesson_11_chat_window_works_after_run_all(browser, jupyter):
    name = next(n for n in NOTEBOOKS if n.startswith("11_"))
    context, console = browser
    page = _open(context, console, jupyter, name)
    _run_all(page)
    _check_outputs(page, name)
    chat = Chat(page)
    chat.window.scroll_into_view_if_needed()
    shown = chat.messages()
    assert shown >= 2, "the window should show the turns the cells above it asked"

    answer = chat.ask("Where can I print a poster?", how="enter")
    assert "Harrow Library" in answer and chat.status.inner_text() == ""
    answer = chat.ask("When is the library open?", how="send")
    assert "library" in answer.lower() and chat.messages() == shown + 4

    chat.entry.fill("Is the swimming po")  # half typed, then the box loses focus
    chat.entry.press("Tab")
    chat.button("Undo").click()  # handled after anything the blur might have sent
    chat.settle(shown + 2)
    assert "Undid turn" in chat.status.inner_text() and "Is the swimming po" not in chat.box.inner_text()
    assert chat.entry.input_value() == "Is the swimming po"

    title = page.locator(".jupyter-widget-Collapse-header", has_text="Turns kept")
    title.click()
    pane = page.locator(".jupyter-widget-Collapse-open .widget-html").first
    pane.wait_for()
    assert "turn 0:" in pane.inner_text() and "Where can I print a poster?" in pane.inner_text()
    title.click()  # closed again, so the screenshot shows the conversation

    chat.button("Reset").click()
    chat.settle(0)
    assert chat.status.inner_text() == "Conversation reset."

    for i, question in enumerate(QUESTIONS, start=1):
        answer = chat.ask(question, how="enter" if i % 2 else "send")
        assert answer.startswith("assistant") and chat.messages() == 2 * i
        chat.window.scroll_into_view_if_needed()
        where = chat.newest_is_visible()
        assert where["inBox"] and where["inView"], f"turn {i}: the newest answer is not in view ({where})"
    assert where["scrolls"], "ten turns should overflow the transcript box, or the check above proves nothing"
    assert chat.status.inner_text() == "", chat.status.inner_text()

    update = os.environ.get("WORKSHOP_UPDATE_SCREENSHOTS") == "1"
    target = SCREENSHOT if update else ARTIFACTS / SCREENSHOT.name
    target.parent.mkdir(parents=True, exist_ok=True)
    chat.window.screenshot(path=str(target))
    page.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}.png"), full_page=True)
    errors = console.take_errors()
    assert not errors, f"{name}: console errors: {errors}"
    page.close()


KEY_DELAY_MS = 15  # a fast typist (the security issue saw keystrokes lost at this speed)
FAST_CHAT = "chat_fast_typing.ipynb"  # a notebook of one cell, written into the server's scratch copy


def _you_said(chat):
    """What each "you" bubble of the transcript shows, in order."""
    texts = [t.strip() for t in chat.bubbles.all_inner_texts()]
    return [t.removeprefix("you").strip() for t in texts if t.startswith("you")]


def test_chat_window_sends_exactly_what_was_typed_however_fast(browser, jupyter):
    """Typed key by key at 15 ms, then Enter or Send at once: exactly the text the box shows is sent, and the
    box is left empty (no last character lost, none left over to begin the next question). Then the same
    without waiting for answers: each question typed while the one before is being answered."""
    context, console = browser
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "id": "chat", "metadata": {},
                           "outputs": [], "source": ["from helpers.chat.chat_session import ChatSession\n",
                                                     "from helpers.app.chat_window import ChatUI\n",
                                                     "ChatUI(ChatSession())"]}],
                "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}
    (jupyter["work"] / FAST_CHAT).write_text(json.dumps(notebook), encoding="utf-8")
    page = _open(context, console, jupyter, FAST_CHAT)
    _run_all(page)
    chat = Chat(page)
    chat.window.scroll_into_view_if_needed()

    def type_and_send(question, how):
        chat.entry.click()
        chat.entry.press_sequentially(question, delay=KEY_DELAY_MS)
        assert chat.entry.input_value().endswith(question)  # what the box shows when Enter or Send is pressed
        if how == "Enter":
            chat.entry.press("Enter")
        else:
            chat.button("Send").click()

    asked = []
    for i, question in enumerate(QUESTIONS, start=1):
        how = "Enter" if i % 2 else "Send"
        type_and_send(question, how)
        asked.append(question)
        chat.settle(2 * i)
        page.wait_for_timeout(300)  # time for a late value update from the browser to arrive, if one is coming
        _wait_idle(page)
        assert _you_said(chat) == asked, f"question {i} ({how}): sent {_you_said(chat)[-2:]}"
        assert chat.entry.input_value() == "", f"the box kept {chat.entry.input_value()!r} after question {i}"
        assert "mod-active" not in chat.button("Send").get_attribute("class"), "Send was left pressed"

    burst = [(question, "Enter" if i % 3 else "Send") for i, question in enumerate(QUESTIONS[:5], start=1)]
    for question, how in burst:  # no waiting for the answer
        type_and_send(question, how)
        asked.append(question)
    chat.settle(2 * len(asked))
    page.wait_for_timeout(300)
    _wait_idle(page)
    assert _you_said(chat) == asked, f"typed while answers were coming, sent {_you_said(chat)[-len(burst):]}"
    assert chat.entry.input_value() == "" and chat.status.inner_text() == "", chat.status.inner_text()
    errors = console.take_errors()
    assert not errors, f"{FAST_CHAT}: console errors: {errors}"
    page.close()
