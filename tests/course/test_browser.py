"""The page a learner sees: JupyterLab in headless Chromium runs a lab with its own Run All.

A real JupyterLab on a free loopback port, every Jupyter folder temporary, the course's settings
override installed, over output-free copies of the notebooks (`labkit.course.student`), so that
every output checked is the run's. For 00 and lab 01 it clicks Run ▸ Run All Cells and reads
JupyterLab's own notebook model: every code cell ran, no error, no news popup, lab 01 shows a chart;
every lab's mermaid diagrams render; and at a laptop's 1366×768 with the file browser open, every
lab's committed outputs read without a broken figure, a mid-word break or a diagram past one
screen. Chromium is Debian's (`.ci/run` installs it), driven by
`playwright` with `executable_path`; without either the test is skipped, under CI=true it fails."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from labkit.core.cells import SHORT
from labkit.course.jupyter_settings import SOURCE
from labkit.course.student import student_copies

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "labkit-browser-test"
# `python -m jupyterlab` after `import labkit` (see labkit/__init__.py): 0.8 s to import, not 1.9 s.
SERVE = "import sys, labkit; from jupyterlab.labapp import main; sys.exit(main())"
START_TIMEOUT = 120  # s for JupyterLab to answer; a cold start on 2 busy cores took ~15 s
RUN_TIMEOUT = 300  # s for one notebook's Run All

pytestmark = pytest.mark.browser

# 00 and lab 01 in `make test`; LABKIT_BROWSER_LABS=00,01,02,03,04 with -s prints each lab's Run All time.
RUN_ALL = os.environ.get("LABKIT_BROWSER_LABS", "00,01").split(",")


def _missing() -> str | None:
    if not Path(CHROMIUM).is_file():
        return f"no chromium at {CHROMIUM} (Debian: apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -r requirements.txt)"
    return None


# What a learner reads of every lab, in one notebook without a kernel: each code cell with its
# committed outputs (which nbval holds equal to a run's) and each markdown cell with a diagram, marked
# with its lab and index, signed as trusted (so its HTML shows as a run's would, styles kept). The
# other markdown cells hold nothing the page checks (no output area): rendering them, MathJax and
# all, was a third of this notebook's Chromium time; opening the four labs themselves would start
# four kernels only to render markdown.
LAYOUT = "layout.ipynb"


def _shown(cell: dict) -> bool:
    return cell["cell_type"] == "code" or "```mermaid" in "".join(cell["source"])


def _write_layout(target: Path, data_dir: Path) -> None:
    import nbformat
    from nbformat.sign import NotebookNotary

    cells = [
        {**cell, "metadata": {"lab": path.name[:2], "index": index}}
        for path in sorted(NOTEBOOKS.glob("0[0-4]_*.ipynb"))
        for index, cell in enumerate(json.loads(path.read_text())["cells"])
        if _shown(cell)
    ]
    notebook = nbformat.from_dict({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    data_dir.mkdir(parents=True)
    NotebookNotary(data_dir=str(data_dir)).sign(notebook)  # the server's notary reads the same folder
    target.write_text(json.dumps(notebook))


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    """A JupyterLab server on a loopback port of its choosing over a copy of notebooks/; yields its URL."""
    if (reason := _missing()) is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the browser test must run under CI=true: {reason}")
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "notebooks"
    student_copies(NOTEBOOKS, root)
    _write_layout(root / LAYOUT, base / "jupyter_data_dir")
    config = base / "config"
    (config / "labconfig").mkdir(parents=True)
    # The same file `python -m labkit.course.jupyter_settings` installs, here as a config-dir layer,
    # with every cell attached to the page (not only those in view), so the layout test can measure
    # all of them without scrolling to each.
    overrides = json.loads(SOURCE.read_text())
    overrides["@jupyterlab/notebook-extension:tracker"] = {"windowingMode": "none"}
    (config / "labconfig" / "default_setting_overrides.json").write_text(json.dumps(overrides))
    folders = ("JUPYTER_RUNTIME_DIR", "JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR", "IPYTHONDIR")
    folders += ("JUPYTER_DATA_DIR",)
    env = os.environ | {name: str(base / name.lower()) for name in folders}
    env |= {"JUPYTER_CONFIG_DIR": str(config), "LABKIT_RUNS": str(base / "runs")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    # Port 0: the server binds a port of its own choosing and writes it to its runtime file. A port
    # found free here and handed over could be taken in between by another test's server (a Dask
    # scheduler was, once, and the probe read its binary reply).
    options = (
        f"--no-browser --ip=127.0.0.1 --port=0 --port-retries=0 --IdentityProvider.token={TOKEN} "
        "--LabApp.expose_app_in_browser=True --allow-root"
    ).split()
    log = (base / "server.log").open("w")
    command = [sys.executable, "-c", SERVE, *options, f"--ServerApp.root_dir={root}"]
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    runtime = base / "jupyter_runtime_dir" / f"jpserver-{server.pid}.json"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                url = json.loads(runtime.read_text())["url"].rstrip("/")
                with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2):
                    break
            except (OSError, ValueError, KeyError):  # no runtime file yet, half written, or no answer
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start: {(base / 'server.log').read_text()[-2000:]}")
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(scope="module")
def lab(jupyterlab):
    """One JupyterLab page for the module, as a learner keeps one tab open: each test opens its
    notebook there with JupyterLab's own open command."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # Chromium's sandbox needs user namespaces, which a root container lacks.
        args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        page = chromium.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{jupyterlab}/lab?token={TOKEN}")
        page.wait_for_function(
            "() => window.jupyterapp?.commands.hasCommand('docmanager:open')", timeout=START_TIMEOUT * 1000
        )
        # The layout is restored: nothing opens later. Each evaluate returns nothing: playwright
        # would serialise what the promise resolves to (here, a whole widget: 4 s of this process).
        page.evaluate("async () => { await window.jupyterapp.restored; }")
        yield page
        chromium.close()


# Read from JupyterLab's own model of the open notebook (exposed by expose_app_in_browser).
STATE = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = [];
  for (const cell of panel.content.model.cells) {
    if (cell.type !== 'code') continue;
    const outputs = [];
    for (let i = 0; i < cell.outputs.length; i++) {
      const o = cell.outputs.get(i);
      const json = o.toJSON();
      outputs.push({type: o.type, ename: json.ename || null, evalue: json.evalue || null,
                    mimes: Object.keys(json.data || {})});
    }
    cells.push({count: cell.executionCount, outputs});
  }
  return {path: panel.context.path, cells};
}"""


# Polled until true: every code cell has run, or one failed (Run All stops there), and the kernel
# is idle. Cheap: no output is serialised (a chart's PNG is a long base64 string).
DONE = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (panel.sessionContext.session?.kernel?.status !== 'idle') return false;
  let waiting = false;
  for (const cell of panel.content.model.cells) {
    if (cell.type !== 'code') continue;
    for (let i = 0; i < cell.outputs.length; i++) {
      if (cell.outputs.get(i).type === 'error') return true;
    }
    waiting = waiting || cell.executionCount === null;
  }
  return !waiting;
}"""


def _open(page, name: str, ready: str = "w.content?.widgets?.length > 0") -> None:
    """Open `name` with JupyterLab's own open command; wait until it is current and `ready` holds."""
    page.evaluate(
        "async path => { await window.jupyterapp.commands.execute('docmanager:open', {path}); }", name
    )
    page.wait_for_function(
        "name => { const w = window.jupyterapp.shell.currentWidget;"
        f" return w?.context?.path === name && {ready}; }}",
        arg=name,
        timeout=START_TIMEOUT * 1000,
    )


def _run_all(page, name: str, shot: Path) -> dict:
    """Open `name` in the page, Run All, wait until every code cell has run; JupyterLab's state."""
    _open(page, name, "w.sessionContext?.session?.kernel?.status === 'idle'")
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    start = time.perf_counter()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    page.wait_for_function(DONE, timeout=RUN_TIMEOUT * 1000, polling=100)
    seconds = time.perf_counter() - start
    print(f"\nRun All of {name} in JupyterLab: {seconds:.1f} s")  # shown with -s; never asserted
    state = page.evaluate(STATE)
    state["news"] = page.get_by_text("official Jupyter news").count()
    page.screenshot(path=str(shot), full_page=False)
    return state


@pytest.mark.parametrize("pattern", [f"{number}_*.ipynb" for number in RUN_ALL])
def test_run_all_in_jupyterlab_executes_every_cell_without_error(lab, pattern, tmp_path):
    name = next(NOTEBOOKS.glob(pattern)).name
    shot = tmp_path / f"{Path(name).stem}.png"
    state = _run_all(lab, name, shot)
    assert state["path"] == name, f"the page ran {state['path']}, not {name}"
    errors = [o for cell in state["cells"] for o in cell["outputs"] if o["type"] == "error"]
    assert errors == [], errors[:1]
    source = json.loads((NOTEBOOKS / name).read_text())["cells"]
    assert len(state["cells"]) == sum(cell["cell_type"] == "code" for cell in source)
    assert all(cell["count"] is not None for cell in state["cells"])
    assert state["news"] == 0, "JupyterLab's news popup is showing: the settings override was not applied"
    if name.startswith("01_"):  # read from the model: the page renders only the cells in view
        charts = [o for cell in state["cells"] for o in cell["outputs"] if "image/png" in o["mimes"]]
        assert charts, "lab 01 shows no chart"
    assert shot.stat().st_size > 10_000


# The ```mermaid blocks of the open notebook, by lab and cell index, and how many rendered as an SVG that
# displays (not mermaid's own "Syntax error" picture).
# A markdown cell is rendered only once it is in view (JupyterLab windows the notebook), so each is
# scrolled to first.
MERMAID = """async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.context.ready;
  await panel.revealed;
  const notebook = panel.content;
  const found = [];
  for (let i = 0; i < notebook.widgets.length; i++) {
    const cell = notebook.widgets[i];
    if (cell.model.type !== 'markdown') continue;
    const blocks = (cell.model.sharedModel.getSource().match(/^```mermaid/gm) || []).length;
    if (!blocks) continue;
    await notebook.scrollToItem(i, 'center');
    // JupyterLab draws each diagram as an SVG: inline, or as an <img> of an SVG data URL.
    const drawn = () => [...cell.node.querySelectorAll(
      '.jp-RenderedMermaid svg, .jp-RenderedMermaid img[src^="data:image/svg+xml"]')];
    for (let wait = 0; wait < 150 && drawn().length < blocks; wait++) {
      await new Promise(resolve => setTimeout(resolve, 100));
    }
    const svgs = drawn();
    await Promise.all(svgs.map(s => s.decode ? s.decode().catch(() => null) : null));
    const text = svgs.map(s => s.tagName === 'IMG' ? decodeURIComponent(s.src) : s.outerHTML).join(' ');
    const shown = svgs.filter(s => s.tagName !== 'IMG' || s.naturalWidth > 0).length;
    const error = /Syntax error|Parse error/i.test(text) ? 'mermaid drew a syntax error' : null;
    const [lab, index] = ['lab', 'index'].map(key => cell.model.getMetadata(key));
    found.push({lab, index, blocks, svgs: shown, error});
    if (svgs.length) svgs[0].scrollIntoView({block: 'center'});
  }
  return found;
}"""


@pytest.fixture(scope="module")
def layout(lab) -> dict:
    """The layout notebook opened once at a laptop's 1366×768, with the file browser open: what
    LAYOUT_JS finds (nothing runs: it names no kernel, and Escape answers JupyterLab's "which kernel?"
    with none), then each diagram block's state (MERMAID)."""
    page = lab
    page.set_viewport_size({"width": 1366, "height": 768})
    try:
        _open(page, LAYOUT)
        dialog = page.locator(".jp-Dialog")
        dialog.wait_for(timeout=START_TIMEOUT * 1000)
        page.keyboard.press("Escape")
        dialog.wait_for(state="detached", timeout=START_TIMEOUT * 1000)
        return {"measured": page.evaluate(LAYOUT_JS), "diagrams": page.evaluate(MERMAID)}
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})


def test_every_mermaid_diagram_renders_as_an_svg(layout):
    """Rendered, not run: a diagram is markdown, drawn by JupyterLab itself (>= 4.1, no extension)."""
    labs = [
        path.name[:2]
        for path in sorted(NOTEBOOKS.glob("0[0-4]_*.ipynb"))
        for cell in json.loads(path.read_text())["cells"]
        if cell["cell_type"] == "markdown" and _shown(cell)
    ]
    assert set(labs) == {"01", "02", "03", "04"}, "a lab has no mermaid diagram"
    diagrams = layout["diagrams"]
    assert [d["lab"] for d in diagrams] == labs, f"{len(labs)} diagrams, {len(diagrams)} found in the page"
    for diagram in diagrams:
        where = f"lab {diagram['lab']} cell {diagram['index']}"
        assert diagram["error"] is None and diagram["svgs"] >= diagram["blocks"], f"{where}: {diagram}"


# At 1366×768 with the file browser open, in the page's pixels: each table cell that holds a figure
# and is short enough to stay whole (labkit.core.cells) on one line, each table inside its output,
# each line of text output unbroken, each diagram inside one screen at a readable scale, and every
# file name in the browser shown whole.
LAYOUT_JS = """async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.context.ready;
  await panel.revealed;
  const found = [];
  const say = (cell, what) => found.push(
    `lab ${cell.model.getMetadata('lab')} cell ${cell.model.getMetadata('index')}: ${what}`);
  const lines = node => {
    const range = document.createRange();
    range.selectNodeContents(node);
    return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
  };
  for (const cell of panel.content.widgets) {
    for (const table of cell.node.querySelectorAll('.jp-OutputArea-output table')) {
      const area = table.closest('.jp-OutputArea-output');
      const wide = table.getBoundingClientRect().width > area.clientWidth + 1;
      if (wide) say(cell, 'a table wider than its output');
      for (const td of table.querySelectorAll('td, th')) {
        const text = td.textContent.trim();
        const whole = text.length > 0 && text.length <= SHORT && (/\\d/.test(text) || !/\\s/.test(text));
        if (whole && lines(td) > 1) say(cell, `${JSON.stringify(text)} breaks onto two lines`);
      }
    }
    for (const pre of cell.node.querySelectorAll('.jp-OutputArea-output pre')) {
      const height = parseFloat(getComputedStyle(pre).lineHeight);
      const count = pre.textContent.replace(/\\n$/, '').split('\\n').length;
      const shown = Math.round(pre.getBoundingClientRect().height / height);
      if (shown > count) say(cell, 'a text line breaks mid-word');
    }
    const source = cell.model.type === 'markdown' ? cell.model.sharedModel.getSource() : '';
    const blocks = (source.match(/^```mermaid/gm) || []).length;
    const drawn = () => [...cell.node.querySelectorAll('.jp-RenderedMermaid svg, .jp-RenderedMermaid img')];
    for (let wait = 0; wait < 150 && drawn().length < blocks; wait++) {
      await new Promise(resolve => setTimeout(resolve, 100));
    }
    for (const svg of drawn()) {
      const box = svg.getBoundingClientRect();
      const scale = box.width / (svg.tagName === 'IMG' ? svg.naturalWidth : svg.viewBox.baseVal.width);
      if (box.height > SCREEN) say(cell, `a diagram ${Math.round(box.height)} px tall`);
      if (scale < SCALE) say(cell, `a diagram drawn at ${Math.round(100 * scale)}% of its size`);
    }
  }
  for (const name of document.querySelectorAll('.jp-DirListing-itemText')) {
    if (name.scrollWidth > name.clientWidth + 1) found.push(`file browser: ${name.textContent} is cut`);
  }
  return {found, sidebar: document.querySelector('#jp-left-stack')?.getBoundingClientRect().width ?? 0};
}"""
# One screen: 768 px less JupyterLab's menu, tabs, toolbar and status bar; below 75% a diagram's
# text is smaller than 10 px.
for name, value in {"SHORT": SHORT, "SCREEN": 600, "SCALE": 0.75}.items():
    LAYOUT_JS = LAYOUT_JS.replace(name, str(value))


def test_every_lab_reads_at_1366_px_with_the_file_browser_open(layout):
    """A laptop's screen: the outputs of every lab as committed, at 1366×768 with JupyterLab's file
    browser open."""
    measured = layout["measured"]
    assert measured["sidebar"] > 200, "the file browser is not open beside the notebook"
    assert measured["found"] == [], "\n".join(measured["found"][:12])
