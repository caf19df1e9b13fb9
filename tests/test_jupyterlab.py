"""The chapters in JupyterLab, as a reader runs them: live ipywidgets controls, bertviz views, typing.

Starts ``.venv``'s JupyterLab on 127.0.0.1 (free port, token, temporary config/data/runtime dirs,
HOME and cache; live controls: no ``TRANSFORMER_LITE_STATIC``), on a temporary COPY of
``notebooks/`` so that no checkpoints or outputs land in the repository, and drives Debian's
Chromium through Playwright (no browser download). One server for every chapter here:

* chapter 13 (the translator): Run All Cells, every code cell gets an execution count and none writes an error
  (checked on the page and in the notebook saved by File > Save), the bertviz views draw their SVG, moving an
  ``explore`` slider and picking another drop-down value redraw the figure below them, and typing a sentence into
  the translator box translates it. (Chapter 2 ran here too, for its slider and drop-down alone: the same widgets
  the same code draws, checked twice; it runs with live controls in the portability run.)
* chapter 12: Run All Cells, no error, with live controls.
* appendix C in Chinese (notebooks/zh/): a link to one of its sections scrolls to the heading, a link to a
  section of chapter 7 opens chapter 7 (at its top: JupyterLab scrolls before laying the new notebook out) and,
  clicked again, shows the section; the same in the English notebooks (both editions put <div id="slug"></div>
  before a linked heading: JupyterLab names headings by their text, the links use MyST's slugs).

The browser console must stay free of errors and the server's log free of ERROR lines.
Nothing may leave the machine: JupyterLab's news, update check and PyPI extension listing are
switched off by flags, and every browser request that is not to the local server fails the test,
except bertviz's require.js/d3/jquery from cdnjs (what Jupyter loads for a reader who is online),
which are answered from the copies in node_modules/ that the book's site serves too.
Skipped when Chromium, Playwright, JupyterLab or node_modules is missing, except under CI=true.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from chromium import need as _need  # the browser fixture is conftest.py's

# one xdist worker runs this file: one JupyterLab server for all its tests (`make test` runs `pytest -n 3`)
pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("jupyterlab")]

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
NODE = ROOT / "node_modules"
SHOTS = ROOT / "_build" / "screenshots-jupyterlab"  # test_site.py empties _build/screenshots
NB = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"  # the chapter in the current tab
RUN_TIMEOUT = 400  # s for Run All Cells of one chapter: a bound against hangs, not a speed test (chapter 13 took 79 s
# in make test on 2 cores; 150 s timed out while the machine ran two builds and three tests at once)

# bertviz's require.config (transformer_lite.book.viz, in Jupyter) -> the same libraries from node_modules
CDN = {
    re.compile(r"/ajax/libs/require\.js/[\d.]+/require(\.min)?\.js$"): NODE / "requirejs" / "require.js",
    re.compile(r"/ajax/libs/d3/[\d.]+/d3(\.min)?\.js$"): NODE / "d3" / "dist" / "d3.min.js",
    re.compile(r"/ajax/libs/jquery/[\d.]+/jquery(\.min)?\.js$"): NODE / "jquery" / "dist" / "jquery.min.js",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the kernels run in sessions of their own, so a group kill misses them)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _kill(pids: list[int], sig: int):
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def _quietly(f):
    try:
        f()
    except OSError:  # the server is gone: the fixture's teardown reports nothing more useful
        pass


class Lab:
    def __init__(self, base: str, token: str, root: Path, log: Path):
        self.base, self.token, self.root, self.log = base, token, root, log

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(f"{self.base}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def log_size(self) -> int:
        return self.log.stat().st_size

    def log_problems(self, since: int = 0) -> list[str]:
        """The server's ERROR lines and tracebacks since byte ``since`` of its log."""
        with open(self.log, "rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
        return [line for line in text.splitlines() if line.startswith("[E ") or line.startswith("Traceback")]

    def log_tail(self, n: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-n:]

    def shutdown_kernels(self):
        for k in self.api("api/kernels"):
            self.api(f"api/kernels/{k['id']}", method="DELETE")


@pytest.fixture(scope="module")
def lab():
    _need((VENV_BIN / "jupyter-lab").exists(), "JupyterLab is not installed in .venv (make install)")
    _need((NODE / "d3").is_dir() and (NODE / "requirejs").is_dir() and (NODE / "jquery").is_dir(),
          "node_modules is missing (make install runs npm ci)")
    tmp = Path(tempfile.mkdtemp(prefix="tl-jupyterlab-"))
    root = tmp / "notebooks"
    shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "_build"))
    dirs = {name: tmp / name for name in ("config", "data", "runtime", "home", "cache")}
    for d in dirs.values():
        d.mkdir()
    # user settings: never fetch news (and so no "fetch news?" prompt over the page)
    settings = dirs["config"] / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    # every cell in the page (JupyterLab 4 renders only the cells in view by default): the tests read all of them
    tracker = dirs["config"] / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    # a reader's environment: live controls (no TRANSFORMER_LITE_STATIC), Jupyter's own inline figures
    drop = {"TRANSFORMER_LITE_STATIC", "MPLBACKEND", "MPLCONFIGDIR", "IPYTHONDIR"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("JUPYTER")}
    env.update(JUPYTER_CONFIG_DIR=str(dirs["config"]), JUPYTER_DATA_DIR=str(dirs["data"]),
               JUPYTER_RUNTIME_DIR=str(dirs["runtime"]), HOME=str(dirs["home"]),
               TRANSFORMER_LITE_CACHE=str(dirs["cache"]), JUPYTER_PLATFORM_DIRS="1")
    port, token = _free_port(), os.urandom(16).hex()
    cmd = [str(VENV_BIN / "jupyter-lab"), "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           # nothing reaches the internet at start-up: no news feed, no update check, no PyPI listing
           "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.extension_manager=readonly", "--ServerApp.terminals_enabled=False"]
    log = tmp / "jupyterlab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp,
                                start_new_session=True)
    server = Lab(f"http://127.0.0.1:{port}/", token, root, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                server.api("api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer within 60 s:\n{log.read_text()[-3000:]}")
                time.sleep(0.3)
        yield server
    finally:
        kids = _descendants(proc.pid)
        if proc.poll() is None:
            _quietly(server.shutdown_kernels)
        proc.send_signal(signal.SIGTERM)  # one SIGTERM: the server shuts down its kernels and stops
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        _kill([p for p in kids if Path(f"/proc/{p}").exists()], signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


class Page:
    """One chapter open in JupyterLab, with everything the browser reported."""

    def __init__(self, browser, lab: Lab, notebook: str):
        self.lab, self.notebook = lab, notebook
        self.log_start = lab.log_size()
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.console: list[str] = []
        self.outside: list[str] = []
        # only requests that do not go to the local server reach Python (a sync route handler runs
        # only while Playwright waits, hence page.wait_for_timeout below instead of time.sleep)
        self.context.route(re.compile("^(?!" + re.escape(lab.base) + ")"), self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.console.append(f"{m.text} @ {m.location}"))
        self.page.on("pageerror", lambda e: self.console.append(f"uncaught: {e}"))
        # a workspace of its own: JupyterLab would otherwise reopen the previous chapter's tab too
        workspace = notebook.removesuffix(".ipynb").replace("/", "-")
        self.page.goto(f"{lab.base}lab/workspaces/{workspace}/tree/{notebook}?token={lab.token}")

    def _route(self, route):
        url = route.request.url
        if url.startswith("https://cdnjs.cloudflare.com/"):
            for pattern, path in CDN.items():
                if pattern.search(url.split("?")[0]):
                    return route.fulfill(path=str(path), content_type="application/javascript")
        self.outside.append(url)
        return route.abort()

    def close(self):
        """Screenshot (as the test left the page) into _build/screenshots-jupyterlab/, then close the tab."""
        try:
            SHOTS.mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(SHOTS / f"{Path(self.notebook).stem}.png"))
        except Exception:  # noqa: BLE001 - a screenshot must not hide the test's own failure
            pass
        self.context.close()

    # ------------------------------------------------------------ running
    def run_all(self):
        """Run > Run All Cells; wait until no cell is queued and the kernel is idle; every cell must have run."""
        p = self.page
        p.wait_for_selector(f"{NB} .jp-Cell", timeout=60_000)
        self.wait_kernel_ready(90)
        p.click(".lm-MenuBar-item:has-text('Run')")
        p.click(".lm-Menu-item[data-command='runmenu:run-all']")
        t0 = time.monotonic()
        started, quiet = False, 0
        while quiet < 3:  # 3 polls in a row (>= 1.5 s) with nothing queued and the kernel idle
            prompts = self.prompts()
            queued = any(s == "[*]:" for s in prompts)
            started = started or queued or any(re.fullmatch(r"\[\d+\]:", s) for s in prompts)
            quiet = quiet + 1 if started and not queued and self.kernel_status() == "idle" else 0
            if not started and time.monotonic() - t0 > 30:
                pytest.fail(f"{self.notebook}: Run All Cells did not start any cell within 30 s")
            if time.monotonic() - t0 > RUN_TIMEOUT:
                pytest.fail(f"{self.notebook}: Run All Cells did not finish within {RUN_TIMEOUT} s; "
                            f"prompts {prompts}, kernel {self.kernel_status()!r}; errors {self.errors()}")
            self.page.wait_for_timeout(500)
        self.run_seconds = time.monotonic() - t0
        errors = self.errors()
        assert not errors, f"{self.notebook}: a cell wrote an error:\n" + "\n".join(errors)
        missing = [i for i, s in enumerate(prompts) if not re.fullmatch(r"\[\d+\]:", s)]
        assert not missing, (f"{self.notebook}: code cells {missing} (0-based, of {len(prompts)}) have no execution "
                             f"count after Run All Cells: {[prompts[i] for i in missing]}")
        self.check_saved()
        print(f"{self.notebook}: Run All Cells took {self.run_seconds:.1f} s in JupyterLab")
        return prompts

    def check_saved(self):
        """File > Save Notebook, then read the saved copy: every code cell ran, no error output, no traceback."""
        path = self.lab.root / self.notebook
        before = path.stat().st_mtime_ns
        self.page.click(".lm-MenuBar-item:has-text('File')")
        self.page.click(".lm-Menu-item[data-command='docmanager:save']")
        deadline = time.monotonic() + 30
        while path.stat().st_mtime_ns == before:
            if time.monotonic() > deadline:
                pytest.fail(f"{self.notebook}: File > Save Notebook did not write the notebook within 30 s")
            self.page.wait_for_timeout(200)
        self.page.wait_for_timeout(500)  # the write is one call, but let it finish
        cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
        unrun = [i for i, c in enumerate(cells) if c.get("execution_count") is None]
        assert not unrun, f"{self.notebook}: saved code cells {unrun} have no execution count"
        bad = [(i, o.get("ename") or "".join(o.get("text", ""))[:300]) for i, c in enumerate(cells)
               for o in c["outputs"] if o["output_type"] == "error"
               or (o["output_type"] == "stream" and o["name"] == "stderr" and "Traceback" in "".join(o["text"]))]
        assert not bad, f"{self.notebook}: saved error outputs (code cell, error): {bad}"

    def prompts(self) -> list[str]:
        return self.page.eval_on_selector_all(
            f"{NB} .jp-CodeCell .jp-InputArea-prompt", "els => els.map(e => e.textContent.trim())")

    def kernel_status(self) -> str:
        return self.page.evaluate(
            "() => { const e = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) "
            ".jp-Notebook-ExecutionIndicator');"
            " return e ? (e.dataset.status || '') : ''; }")

    def wait_kernel_ready(self, seconds: float):
        """The notebook's kernel has started, the page is connected to it, and it is idle."""
        deadline = time.monotonic() + seconds
        while True:
            sessions = [s for s in self.lab.api("api/sessions") if s["path"].endswith(self.notebook)]
            kernel = sessions[0]["kernel"] if sessions else {}
            if (kernel.get("execution_state") == "idle" and kernel.get("connections", 0) >= 1
                    and self.kernel_status() == "idle"):
                return
            if time.monotonic() > deadline:
                pytest.fail(f"{self.notebook}: kernel not ready after {seconds} s: {kernel}, "
                            f"page says {self.kernel_status()!r}; server log:\n{self.lab.log_tail()}")
            self.page.wait_for_timeout(300)

    def errors(self) -> list[str]:
        """Error outputs and tracebacks on stderr, anywhere in the notebook (widget outputs included)."""
        return self.page.evaluate(r"""(nb) => {
          const out = [];
          document.querySelectorAll(nb + ' [data-mime-type="application/vnd.jupyter.error"]')
            .forEach(e => out.push('error: ' + e.textContent.slice(0, 1500)));
          document.querySelectorAll(nb + ' [data-mime-type="application/vnd.jupyter.stderr"]')
            .forEach(e => {
              if (/Traceback|Error\b/.test(e.textContent)) out.push('stderr: ' + e.textContent.slice(0, 1500));
            });
          return out;
        }""", NB)

    def check_clean(self):
        assert not self.errors(), f"{self.notebook}: a cell wrote an error:\n" + "\n".join(self.errors())
        assert not self.outside, f"{self.notebook}: requests left the machine: {self.outside}"
        assert not self.console, f"{self.notebook}: browser console errors:\n" + "\n".join(self.console)
        problems = self.lab.log_problems(self.log_start)
        assert not problems, f"{self.notebook}: JupyterLab logged errors:\n" + "\n".join(problems[:20])

    # ------------------------------------------------------------ controls
    def open_deep_dives(self):
        """Click every collapsed heading's "N cells hidden" button: controls inside a deep dive (bookbuild/chapters.py)
        are hidden until the reader opens it."""
        buttons = self.page.locator(f"{NB} .jp-showHiddenCellsButton")
        for _ in range(50):
            if not buttons.count():
                return
            buttons.first.click()
            self.page.wait_for_timeout(200)
        pytest.fail(f"{self.notebook}: the deep dives' 'cells hidden' buttons did not go away")

    def explore_box(self):
        """The first explore() VBox: a row of sliders/drop-downs above a widget output."""
        return self.page.locator(f"{NB} .widget-vbox:has(> .widget-hbox .widget-slider):has(> .widget-output)").first

    def wait_changed(self, read, before, what: str, seconds: float = 60):
        deadline = time.monotonic() + seconds
        while True:
            now = read()
            if now and now != before:
                return now
            if time.monotonic() > deadline:
                pytest.fail(f"{self.notebook}: {what} did not change within {seconds} s; errors {self.errors()}")
            self.page.wait_for_timeout(300)


def _figure(box):
    def read():
        imgs = box.locator(".widget-output img")
        return imgs.first.get_attribute("src") if imgs.count() else None
    return read


def _move_slider(page: Page, box):
    """One step of the first slider (right, or left when it starts at its last value), by keyboard."""
    slider = box.locator(".widget-slider").first
    handle = slider.locator(".noUi-handle").first
    readout = slider.locator(".widget-readout")
    now, last = (float(handle.get_attribute(a)) for a in ("aria-valuenow", "aria-valuemax"))
    before = readout.text_content().strip()
    assert before, "the slider shows no value"
    handle.focus()
    page.page.keyboard.press("ArrowRight" if now < last else "ArrowLeft")
    page.wait_changed(lambda: readout.text_content().strip(), before, "the slider's value")


def _explore_controls_redraw(page: Page, box):
    figure = _figure(box)
    first = page.wait_changed(figure, None, "the explore figure (first drawing)")
    _move_slider(page, box)
    second = page.wait_changed(figure, first, "the figure after moving the slider")
    select = box.locator(".widget-dropdown select").first
    options = select.locator("option").all_inner_texts()
    current = select.evaluate("s => s.options[s.selectedIndex].text")
    select.select_option(label=next(o for o in options if o != current))
    page.wait_changed(figure, second, "the figure after picking another drop-down value")


def test_translator_chapter_13_is_live(lab, browser):
    page = Page(browser, lab, "13_capstone_translator.ipynb")
    try:
        page.run_all()
        page.check_clean()
        p = page.page
        # bertviz: head view and model view drew their SVG (lines, boxes, token labels)
        views = p.locator(f"{NB} .tl-bertviz")
        assert views.count() >= 2, f"expected the head view and the model view, found {views.count()} bertviz outputs"
        for i in range(views.count()):
            page.wait_changed(lambda i=i: views.nth(i).evaluate(
                "v => [...v.querySelectorAll('svg')].reduce((n, s) => n + s.querySelectorAll('rect, "
                "line, text, path').length, 0)"),
                0, f"bertviz view {i}'s SVG", seconds=30)
        # explore: slider and drop-down redraw the attention figure (the first one sits in a deep dive: open them)
        page.open_deep_dives()
        _explore_controls_redraw(page, page.explore_box())
        # translator_box: type a sentence, press Enter, the translation below changes
        live = p.locator(f"{NB} .widget-vbox:has(> .widget-text input):has(> .widget-output)").first
        output = live.locator(".widget-output").first
        text = lambda: output.text_content().strip()  # noqa: E731
        before = page.wait_changed(text, None, "the translator box's output")
        assert "greedy:" in before, before
        box = live.locator(".widget-text input")
        box.fill("The dog drinks water")
        box.press("Enter")
        after = page.wait_changed(text, before, "the translation after typing")
        assert "English read:  the dog drinks water" in after, after
        assert "greedy:" in after and "beam, k = 4:" in after and "step  1:" in after, after
        page.check_clean()
    finally:
        page.close()
        _quietly(lab.shutdown_kernels)


def _code_cell(source: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": os.urandom(4).hex(), "metadata": {}, "outputs": [],
            "source": source}


def test_the_explainers_view_draws_and_steps_as_a_cells_output(lab, browser):
    """explain_view.show: the view drawn from the kernel's trace by the site's own script, inline in the output, in the
    notebook's language (the second view after setup(language="zh")), stepped by keyboard; no request leaves the
    server (Page fails on any), the page logs no error. A notebook of its own beside the chapters' copies."""
    from transformer_lite.book import explain
    from transformer_lite.book.explain_view import step_title
    from transformer_lite.book.i18n import set_language, tr

    cells = [_code_cell('from transformer_lite.book.explain_view import show\n'
                        'show("grammar", "Does she read books at school every day?")'),
             _code_cell('from transformer_lite.book.notebook import setup\n'
                        'setup(language="zh")\n'
                        'show("real", "My teacher likes to drink green tea.", step="dec1-cross")')]
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                      "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    (lab.root / "explainer_view.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    page = Page(browser, lab, "explainer_view.ipynb")
    try:
        page.run_all()
        p = page.page
        views = p.locator(f"{NB} .tl-explainer")
        p.wait_for_function(f"document.querySelectorAll('{NB} .tl-explainer[data-tl-state=ready]').length === 2",
                            timeout=30_000)
        first, second = views.nth(0), views.nth(1)
        title = lambda v: v.locator(".tlx-view .tlx-title").inner_text()  # noqa: E731
        shown = lambda v: v.locator(".tlx-step-select").input_value()  # noqa: E731
        ids = first.locator(".tlx-step-select option").evaluate_all("os => os.map(o => o.value)")
        trace = explain.trace("grammar", "Does she read books at school every day?")
        assert first.evaluate("v => v.tlView.trace.tgt_tokens") == trace["tgt_tokens"]
        assert first.locator(".tlx-view svg, .tlx-view table, .tlx-view ol").count() >= 1
        assert shown(first) == "tokens" and title(first) == "Tokens"
        # the keyboard: the arrows, End and Home step while the focus is in the view
        first.locator(".tlx-next").focus()
        p.keyboard.press("ArrowRight")
        assert shown(first) == ids[1] and title(first) == step_title(ids[1])
        p.keyboard.press("End")
        assert shown(first) == "next" and first.locator("ol.tlx-candidates > li").count() == len(trace["tgt_tokens"])
        p.keyboard.press("ArrowLeft")
        assert shown(first) == ids[-2]
        p.keyboard.press("Home")
        assert shown(first) == "tokens"
        first.locator(".tlx-next").click()
        assert shown(first) == ids[1]
        # the second view: Chinese, opened on its step, stepping on its own
        set_language("zh")
        try:
            assert shown(second) == "dec1-cross" and title(second) == step_title("dec1-cross")
            assert second.locator(".tlx-start").is_hidden() and second.locator(".tlx-input").is_hidden()
            status = second.locator(".tlx-status").inner_text()
            assert status.endswith(tr("Step {i} of {n}: {title}", i=ids_index(second, "dec1-cross") + 1,
                                      n=second.locator(".tlx-step-select option").count(),
                                      title=step_title("dec1-cross"))), status
        finally:
            set_language("en")
        second.locator(".tlx-prev").focus()
        p.keyboard.press("ArrowRight")
        assert shown(second) == "dec1-ffn" and shown(first) == ids[1]
        assert "?s=" not in p.url and "step=" not in p.url  # the notebook's address is left alone
        SHOTS.mkdir(parents=True, exist_ok=True)
        second.screenshot(path=str(SHOTS / "explainer-view-zh.png"))
        page.check_clean()
    finally:
        page.close()
        _quietly(lab.shutdown_kernels)


def ids_index(view, step: str) -> int:
    return view.locator(".tlx-step-select option").evaluate_all("os => os.map(o => o.value)").index(step)


@pytest.mark.parametrize("notebook", ["12_inference.ipynb"])
def test_translator_chapters_run_clean(lab, browser, notebook):
    """Chapter 12 asserts behaviours of the shipped translator: every cell runs without an error here too, with live
    controls. (Chapter 9, which does too, runs with live controls in the Colab-like install,
    tests/test_installed_package.py; JupyterLab's own rendering of bertviz's views is checked on chapter 13 above.)"""
    page = Page(browser, lab, notebook)
    try:
        page.run_all()
        page.check_clean()
    finally:
        page.close()
        _quietly(lab.shutdown_kernels)


def _first_deep_dive(folder: Path) -> tuple[str, int, int]:
    """(notebook name, index of its first deep dive's heading cell, number of cells the deep dive holds)."""

    from bookbuild import chapters

    for path in sorted(folder.glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        heads = chapters.deep_dive_heads(nb)
        if heads:
            where = chapters.sections(nb)
            title = where[heads[0]]["deep_dive"]
            inside = sum(1 for w in where[heads[0] + 1:] if w["deep_dive"] == title)
            return path.name, heads[0], inside
    pytest.fail(f"no notebook in {folder} has a deep dive (a heading 'Deep dive: ...')")


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_deep_dives_open_collapsed(lab, browser, edition):
    """A deep dive opens collapsed under its heading, in both editions (jp-MarkdownHeadingCollapsed, written by
    bookbuild/chapters.py fold): its heading cell shows, the cells under it are hidden, and the heading's button, which
    says how many cells it hides, opens them."""
    name, head, inside = _first_deep_dive(ROOT / "notebooks" / edition.rstrip("/"))
    page = Page(browser, lab, f"{edition}{name}")
    try:
        p = page.page
        p.wait_for_selector(f"{NB} .jp-Cell", timeout=60_000)
        p.wait_for_function("([nb, n]) => document.querySelectorAll(nb + ' .jp-Cell').length >= n",
                            arg=[NB, head + inside + 1], timeout=30_000)
        heading = p.locator(f"{NB} .jp-Cell").nth(head)
        heading.locator(".jp-MarkdownOutput h1, .jp-MarkdownOutput h2, .jp-MarkdownOutput h3, .jp-MarkdownOutput h4"
                        ).first.wait_for(timeout=30_000)  # rendered
        assert heading.locator(".jp-collapseHeadingButton.jp-mod-collapsed").count() >= 1, \
            f"{edition}{name}: cell {head} (a deep dive's heading) is not collapsed"
        button = heading.locator(".jp-showHiddenCellsButton")
        button.first.wait_for(timeout=10_000)
        assert button.count() == 1, f"{edition}{name}: the collapsed deep dive shows no 'cells hidden' button"
        assert str(inside) in button.inner_text(), (button.inner_text(), inside)
        hidden = lambda: p.evaluate(  # noqa: E731
            "([nb, i]) => [...document.querySelectorAll(nb + ' .jp-Cell')][i].classList.contains('lm-mod-hidden')",
            [NB, head + 1])
        assert hidden(), f"{edition}{name}: the first cell of the deep dive is visible before it is opened"
        button.click()
        page.wait_changed(lambda: "open" if not hidden() else "", "", "the deep dive's first cell after opening it")
        page.check_clean()
    finally:
        page.close()
        _quietly(lab.shutdown_kernels)


def _heading_cells() -> dict:

    from bookbuild.translation.anchors import heading_cells

    return heading_cells()


def _in_view(page: Page, fragment: str) -> dict:
    """Where the element a fragment names (data-jupyter-id: JupyterLab's sanitizer keeps an `id` as that) sits
    in the current notebook's scrolled panel: {found, top (px from the panel's top), height of the panel}."""
    return page.page.evaluate("""([nb, id]) => {
      const el = document.querySelector(nb + ` [data-jupyter-id="${CSS.escape(id)}"]`);
      const panel = document.querySelector(nb).closest('.jp-WindowedPanel-outer') || document.querySelector(nb);
      if (!el) return {found: false};
      // the anchor line right before the heading (bookbuild/i18n.py anchors): the heading is the next element
      const h = 'h1, h2, h3, h4, h5, h6', next = el.nextElementSibling;
      const heading = el.closest(h) || (next && next.matches(h) ? next : null);
      const r = el.getBoundingClientRect(), p = panel.getBoundingClientRect();
      return {found: true, heading: heading ? heading.textContent : null, top: r.top - p.top, height: p.height};
    }""", [NB, fragment])


def _lands(page: Page, fragment: str, what: str) -> dict:
    """Wait until the heading anchored ``fragment`` is at the top part of the notebook's view."""
    deadline = time.monotonic() + 30
    while True:
        where = _in_view(page, fragment)
        if where.get("found") and -5 <= where["top"] <= 0.5 * where["height"]:
            return where
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: #{fragment} is not in view after the click: {where}")
        page.page.wait_for_timeout(300)


@pytest.mark.parametrize("edition", ["zh/", ""])
def test_section_links_land_on_their_heading(lab, browser, edition):
    """Appendix C's links to its own sections and to chapter 7's: clicking one scrolls the notebook to the heading;
    a link to chapter 7 opens it, and once it is open, shows the heading. The links name the English heading's MyST
    slug (what the site's sections are called). JupyterLab looks a fragment up as an element's data-jupyter-id (its
    sanitizer's name for an `id`); both editions put <div id="english-slug"></div> right before each linked heading
    (`bookbuild/i18n.py anchors`); notebooks/zh/ name another chapter's section by its cell (#cell-id=...,
    translation.anchors.cross_chapter_links), notebooks/ by its slug (the site needs it), which JupyterLab looks up in
    the rendered cells."""
    page = Page(browser, lab, f"{edition}appendix_c_pitfalls.ipynb")
    try:
        p = page.page
        p.wait_for_selector(f"{NB} .jp-Cell", timeout=60_000)
        inpage = "the-missing-transpose"
        p.wait_for_function("nb => document.querySelectorAll(nb + ' .jp-MarkdownOutput h2').length >= 10",
                            arg=NB, timeout=90_000)
        before = _in_view(page, inpage)
        assert before.get("found"), f"{edition}appendix_c_pitfalls: no element named {inpage}: {before}"
        assert before["top"] > before["height"], f"the target is in view before the click: {before}"
        p.locator(f'{NB} a[href="#{inpage}"]').first.click()
        where = _lands(page, inpage, f"{edition}appendix_c_pitfalls, in-page link")
        assert ("缺失的转置" if edition else "The missing transpose") in where["heading"], where
        # a link to a section of chapter 7: JupyterLab opens the chapter in a new tab, scrolled to the heading
        target = "three-conventions-one-attention"
        # notebooks/zh/ name the section's cell (translation.anchors.cross_chapter_links), notebooks/ its English slug
        fragment = f"cell-id={_heading_cells()['07_masking.ipynb'][target]}" if edition else target
        link = f'{NB} a[href*="07_masking.ipynb"][href$="#{fragment}"]'
        current_tab = "() => [...document.querySelectorAll('.lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel')]" \
                      ".some(t => t.textContent.startsWith('{}'))"
        p.locator(link).first.click()
        p.wait_for_function(current_tab.format("07_masking"), timeout=30_000)
        p.wait_for_function("nb => document.querySelectorAll(nb + ' .jp-MarkdownOutput h2').length >= 5",
                            arg=NB, timeout=90_000)
        # JupyterLab 4.6 applies the fragment as soon as the new notebook's file is loaded, before its cells are
        # laid out, so the first click leaves chapter 7 near its top; once it is open, the link lands
        p.locator(".lm-TabBar-tab .lm-TabBar-tabLabel", has_text="appendix_c_pitfalls").first.click()
        p.wait_for_function(current_tab.format("appendix_c_pitfalls"), timeout=30_000)
        p.locator(link).first.click()
        p.wait_for_function(current_tab.format("07_masking"), timeout=30_000)
        where = _lands(page, target, f"{edition}07_masking, cross-chapter link")
        assert ("三种约定" if edition else "Three conventions") in where["heading"], where
        page.check_clean()
    finally:
        page.close()
        _quietly(lab.shutdown_kernels)
