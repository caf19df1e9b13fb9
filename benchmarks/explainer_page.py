"""The explainer's page of the built site (book/explainer.html) driven in Chromium: shared by
tests/test_explainer_web.py (what it shows) and `make bench` (how fast: benchmarks/run.py --only explainer ->
benchmarks/explainer.json).

    python -m benchmarks.explainer_page --runs 5 --out /tmp/explainer.json

``View`` opens the page in its own browser context (nothing cached from another page), records every request and
console message, and starts, steps and waits as a reader would. The page times each trace itself
(``tlView.timings``: from the reader's request to the drawn first step, the model's work and the page's). The
budget below is the page's goal; a test never asserts it (a busy core makes a 100 ms trace take a second).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
OUT = ROOT / "benchmarks" / "explainer.json"
PAGE = {"en": "book/explainer.html", "zh": "zh/book/explainer.html"}
TRACE_MS = 200  # a trace of a 10-word sentence once the model is loaded, in milliseconds
# ten words each, written as a person writes them, every word in the model's vocabulary
TEN_WORDS = {"grammar": "Does the teacher drink tea in the library every day?",
             "real": "I want to go to the library with my friend."}


def url(edition: str, sentence: str | None = None, step: str | None = None, model: str | None = None) -> str:
    """The page's address in ``edition`` ("en" or "zh"), with the parameters a chapter's link carries."""
    params = {k: v for k, v in (("s", sentence), ("step", step), ("model", model)) if v is not None}
    return PAGE[edition] + ("?" + urlencode(params) if params else "")


class View:
    """One explainer page; records every request, response and console message."""

    def __init__(self, browser, base, page_path=PAGE["en"], colour="light"):
        self.ctx = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block",
                                       color_scheme=colour)
        self.page = self.ctx.new_page()
        self.base, self.requests, self.external, self.console = base, [], [], []

        def route(rt):
            u = rt.request.url
            if u.startswith(base) or u.startswith(("data:", "blob:")):
                rt.continue_()
            else:
                self.external.append(u)
                rt.abort()

        self.page.route("**/*", route)
        self.page.on("request", lambda q: self.requests.append(q.url))
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}")
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.console.append(f"uncaught: {e}"))
        self.page.goto(base + page_path, wait_until="load")
        self.page.wait_for_function("document.documentElement.dataset.tlShown !== undefined", timeout=30000)
        self.root = self.page.locator(".tl-explainer").first
        self.root.scroll_into_view_if_needed()
        self.page.wait_for_function("document.querySelector('.tl-explainer').tlView !== undefined", timeout=30000)

    def state(self) -> str:
        return self.root.evaluate("r => r.dataset.tlState")

    def wait(self, timeout=60000) -> str:
        """Until the view is done with the last request: its state ("ready", "message" or "error")."""
        self.page.wait_for_function(
            "['ready', 'message', 'error'].includes(document.querySelector('.tl-explainer').dataset.tlState)",
            timeout=timeout)
        return self.state()

    def start(self, text=None, key=None) -> str:
        """Type ``text`` (and select the translator ``key``), press Start or Enter; wait for the trace."""
        if key is not None and self.root.locator(".tlx-model").input_value() != key:
            self.root.evaluate("r => { r.dataset.tlState = 'typing'; }")
            self.root.locator(".tlx-model").select_option(key)
        if text is not None:
            self.root.locator(".tlx-input").fill(text)
        self.root.evaluate("r => { r.dataset.tlState = 'typing'; }")  # so that wait() sees this request's outcome
        self.root.locator(".tlx-start").click()
        return self.wait()

    def trace(self) -> dict:
        return self.root.evaluate("r => r.tlView.trace")

    def step_ids(self) -> list[str]:
        return self.root.evaluate("r => r.tlView.steps.map(s => s.id)")

    def step(self) -> str:
        return self.root.locator(".tlx-view").get_attribute("data-step")

    def go(self, step_id: str) -> None:
        """Choose ``step_id`` in the step list, as a reader does."""
        self.root.locator(".tlx-step-select").select_option(step_id)
        self.page.wait_for_function("s => document.querySelector('.tlx-view').dataset.step === s", arg=step_id)

    def status(self) -> str:
        return self.root.locator(".tlx-status").inner_text()

    def last_ms(self) -> float:
        return self.root.evaluate("r => r.tlView.timings[r.tlView.timings.length - 1]")

    def loaded(self, name: str) -> list[str]:
        return [u for u in self.requests if u.split("?")[0].endswith("/" + name)]

    def close(self):
        self.ctx.close()


def measure(browser, base: str, runs: int = 5, log=print) -> dict:
    """For each shipped model, ``runs`` fresh page loads: the first trace (the model loads), then the ten-word
    sentence traced ``runs`` times. Median and max of the later traces, and whether the budget is met."""
    from transformer_lite.book.translate import SHIPPED

    rows = []
    for key in SHIPPED:
        first, later = [], []
        for _ in range(runs):
            view = View(browser, base)
            try:
                if view.start(TEN_WORDS[key], key) != "ready" or view.console:
                    raise RuntimeError(f"{key}: {view.status()} {view.console}")
                first.append(view.last_ms())
                for _ in range(runs):
                    if view.start(TEN_WORDS[key]) != "ready":
                        raise RuntimeError(f"{key}: {view.status()}")
                    later.append(view.last_ms())
            finally:
                view.close()
        row = dict(model=key, sentence=TEN_WORDS[key], words=len(TEN_WORDS[key].split()), runs=runs,
                   first_ms=dict(median=round(statistics.median(first), 1), max=round(max(first), 1), n=len(first)),
                   trace_ms=dict(median=round(statistics.median(later), 1), max=round(max(later), 1), n=len(later)))
        row["goal"] = dict(value=row["trace_ms"]["median"], goal=f"<= {TRACE_MS}",
                           met=row["trace_ms"]["median"] <= TRACE_MS)
        rows.append(row)
        log(f"explainer {key:7s} {row['words']} words: first trace (model loading) median "
            f"{row['first_ms']['median']:.0f} ms; later traces median {row['trace_ms']['median']:.0f} ms, "
            f"max {row['trace_ms']['max']:.0f} ms over {len(later)} "
            f"(budget <= {TRACE_MS} ms: {'met' if row['goal']['met'] else 'NOT met'})")
    return dict(budget_ms=TRACE_MS, rows=rows, all_goals_met=all(r["goal"]["met"] for r in rows))


def run(runs: int = 5, html_dir: Path = HTML, log=print) -> dict:
    """Start Chromium (tests/chromium.py: the tests' binary and flags), serve ``html_dir`` on 127.0.0.1, measure."""
    import functools
    import http.server
    import platform
    import threading

    from playwright.sync_api import sync_playwright

    from bookbuild.chromium import ARGS, CHROMIUM

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(html_dir)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                result = measure(browser, f"http://127.0.0.1:{server.server_address[1]}/", runs=runs, log=log)
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()
    result.update(machine=platform.machine(), processor=platform.processor() or platform.machine(),
                  measured=time.strftime("%Y-%m-%d"))
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    result = run(args.runs)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
