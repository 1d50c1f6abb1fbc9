"""The worklog as pages (issue 32, item 5): `results.render_pages` writes a run's executed notebooks as HTML with an
index; here the pages are opened in headless Chromium (Debian's `chromium` package, driven through its DevTools protocol
over a websocket) with every host name unresolvable, as on a machine with no network. Each page must load every image,
show no error output, fetch nothing but itself and its data: URIs, and the index's links must lead to pages that exist.
A PNG screenshot of every page opened goes to the test's tmp dir, and to $MATHWORKLOG_SCREENSHOTS when it is set."""
import base64, itertools, json, os, re, shutil, subprocess, time, urllib.request
from pathlib import Path

import nbformat, nbformat.v4 as nbf
import pytest

from mathworklog.runner import render_pages
from mathworklog.settings import UnusableInputError, fault

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("MATHWORKLOG_CHROMIUM") or shutil.which("chromium")
if os.environ.get("MATHWORKLOG_CHROMIUM") and not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
    raise fault(UnusableInputError, f"$MATHWORKLOG_CHROMIUM={CHROMIUM}", "is not an executable file",
                "a Chromium binary for the pages test", "Point it at one, or unset it to use `chromium` on the PATH.")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="needs a Chromium: Debian's `chromium` package (apt-get install chromium; tools/test.sh "
    "installs it when run as root), or $MATHWORKLOG_CHROMIUM pointing at one")

# What a page shows, read in the browser once it has loaded: images that did not load, the text of every stderr-style
# output area (nbconvert renders stderr streams and errors alike), the links, the number of tables.
CHECK = """(() => {
  const areas = [...document.querySelectorAll('[data-mime-type="application/vnd.jupyter.stderr"]')];
  return {title: document.title,
          images: document.images.length,
          broken: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 80)),
          stderr: areas.map(a => a.innerText.trim().slice(0, 400)),
          links: [...document.links].map(a => a.href),
          tables: document.querySelectorAll('table').length,
          // what sticks out of the page at this width: a figure or a table wider than the window, or a page that
          // scrolls sideways
          overflow: [...document.querySelectorAll('img, table')]
                      .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
                      .map(e => e.tagName + ' ' + Math.round(e.getBoundingClientRect().width) + 'px'),
          page_width: document.documentElement.scrollWidth, window_width: document.documentElement.clientWidth};
})()"""


class Tab:
    "One Chromium tab through the DevTools protocol: open a page, evaluate JavaScript in it, take a screenshot."
    def __init__(self, ws): self.ws, self.ids, self.events = ws, itertools.count(1), []

    def call(self, method: str, timeout: float = 60, **params) -> dict:
        "Send one command and return its result; events that arrive meanwhile are kept in `events`."
        i = next(self.ids)
        self.ws.send(json.dumps(dict(id=i, method=method, params=params)))
        while True:
            m = json.loads(self.ws.recv(timeout))
            if m.get("id") == i:
                if "error" in m: raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]
            self.events.append(m)

    def open(self, url: str, timeout: float = 60) -> list[str]:
        "Load `url` and wait for its load event (every image loaded or failed); the URLs it requested."
        self.events.clear()
        self.call("Page.navigate", url=url)
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(json.loads(self.ws.recv(timeout)))
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def js(self, expression: str):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r: raise RuntimeError(f"javascript: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path: Path, max_height: int = 12000) -> Path:
        "The whole page (its first `max_height` CSS pixels) as a PNG."
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = dict(x=0, y=0, width=size["width"], height=min(size["height"], max_height), scale=1)
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


@pytest.fixture(scope="module")
def tab(tmp_path_factory):
    "A headless Chromium with a fresh profile and no name resolution (nothing can come from a network)."
    from websockets.sync.client import connect

    d = tmp_path_factory.mktemp("chromium")
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--remote-debugging-port=0", "--window-size=1280,900",
            f"--user-data-dir={d / 'profile'}", "about:blank"]
    with open(d / "chromium.log", "w") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    try:
        port_file, t0 = d / "profile" / "DevToolsActivePort", time.monotonic()
        while not (port_file.exists() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() - t0 > 60:
                pytest.fail(f"chromium did not start: {(d / 'chromium.log').read_text()[-2000:]}")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30))
        ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        with connect(ws_url, max_size=None, open_timeout=30) as ws:
            t = Tab(ws)
            t.call("Page.enable")
            t.call("Network.enable")
            yield t
    finally:
        proc.terminate()
        try: proc.wait(20)
        except subprocess.TimeoutExpired: proc.kill()


def look(tab: Tab, page: Path, shot: Path) -> dict:
    "Open `page`, read what it shows (`CHECK`), screenshot it to `shot` (and $MATHWORKLOG_SCREENSHOTS); the report."
    requests = tab.open(page.as_uri())
    r = tab.js(CHECK)
    r["network"] = [u for u in requests if not u.startswith(("file:", "data:"))]
    r["errors"] = [s for s in r["stderr"] if "Traceback" in s or re.search(r"^[\w.]*(Error|Exception)\b", s, re.M)]
    r["screenshot"] = tab.screenshot(shot)
    if os.environ.get("MATHWORKLOG_SCREENSHOTS"):
        out = Path(os.environ["MATHWORKLOG_SCREENSHOTS"])
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, out / shot.name)
    return r


def assert_clean(r: dict, stderr_ok: bool = False):
    "Every image loaded, nothing fetched from a network, no error output (no stderr either unless `stderr_ok`)."
    assert r["broken"] == [], f"images that did not load: {r['broken']}"
    assert r["network"] == [], f"requests beyond the page: {r['network']}"
    assert r["errors"] == [], f"error outputs: {r['errors']}"
    assert r["overflow"] == [] and r["page_width"] <= r["window_width"], \
        f"wider than the {r['window_width']}px window: {r['overflow']}, the page {r['page_width']}px"
    if not stderr_ok: assert r["stderr"] == [], f"stderr outputs: {r['stderr']}"


def check_run(tab: Tab, index: Path, shots: Path, chapters: list[str], stderr_ok: bool = False) -> dict:
    "Open a run's `index` page and the pages of `chapters` through its links, check each one; the reports."
    run = index.parent.parent
    shots.mkdir(parents=True, exist_ok=True)
    reports = {"index": look(tab, index, shots / f"{run.name}-index.png")}
    assert_clean(reports["index"])
    links = reports["index"]["links"]
    assert links and all(Path(urllib.request.url2pathname(u.removeprefix("file://"))).is_file() for u in links), links
    for stem in chapters:
        url = next(u for u in links if u.endswith(f"/{stem}.html"))
        reports[stem] = look(tab, Path(urllib.request.url2pathname(url.removeprefix("file://"))),
                             shots / f"{run.name}-{stem}.png")
        assert_clean(reports[stem], stderr_ok)
    return reports


DEMO = [nbf.new_markdown_cell("# A figure and a table\n\nWhat a chapter shows: a **plot** and a data frame."),
        nbf.new_code_cell("import matplotlib.pyplot as plt, pandas as pd\n"
                          "fig, ax = plt.subplots(figsize=(5, 2.5))\n"
                          "ax.plot([1, 2, 3, 4], [0.1, 0.4, 0.35, 0.6], 'o-')\n"
                          "ax.set(title='exact accuracy', xlabel='step')\nplt.show()"),
        nbf.new_code_cell("pd.DataFrame(dict(step=[1, 2], exact=[0.25, 0.5]))"),
        nbf.new_code_cell("pd.DataFrame({f'a rather long column name {i}': ['a long cell of text ' * 3] for i in "
                          "range(12)})"),                                # far wider than a desktop window
        nbf.new_code_cell("fig, ax = plt.subplots(figsize=(24, 2))\nax.plot([0, 1])\nplt.show()"),   # 2,400 px
        nbf.new_code_cell("from IPython.display import HTML\n"                    # a table that asks for 3,000 px
                          "HTML('<table style=\"width:3000px\"><tr><td>wide</td></tr></table>')"),
        nbf.new_code_cell("print('done')")]


def png_output() -> dict:
    "A display_data output holding a small real PNG (a matplotlib figure)."
    import io, matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.bar(["a", "b"], [3, 1])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return nbf.new_output("display_data", data={"image/png": base64.b64encode(buf.getvalue()).decode(),
                                                "text/plain": "<Figure>"})


def test_pages_in_chromium(tab, tmp_path):
    "A worklog run folder of two chapters (one executed by papermill): index and both pages load clean in Chromium."
    import papermill as pm

    run = tmp_path / "worklog-demo"
    run.mkdir()
    nbformat.write(nbf.new_notebook(cells=DEMO, metadata=dict(kernelspec=dict(name="python3", language="python",
                                                                               display_name="python3"))),
                   tmp_path / "02_demo.ipynb")
    pm.execute_notebook(str(tmp_path / "02_demo.ipynb"), str(run / "02_demo.ipynb"), kernel_name="python3",
                        progress_bar=False)
    nbformat.write(nbf.new_notebook(cells=[nbf.new_markdown_cell("# Made without a kernel"),
                                           nbf.new_code_cell("bars()", outputs=[png_output()])]),
                   run / "03_made.ipynb")
    (run / "meta.json").write_text(json.dumps(dict(chapter="worklog", preset="tiny", status="done",
                                                   results=dict(seconds={"02_demo": 4.2, "03_made": 0.1}))))
    r = check_run(tab, render_pages(run), tmp_path / "shots", ["02_demo", "03_made"])
    assert r["index"]["title"] == "Worklog worklog-demo" and len(r["index"]["links"]) == 2
    assert (r["02_demo"]["title"], r["02_demo"]["images"], r["02_demo"]["tables"]) == ("A figure and a table", 2, 3)
    assert (r["03_made"]["images"], r["03_made"]["tables"]) == (1, 0)
    assert all(p["screenshot"].stat().st_size > 10_000 for p in r.values())


def test_broken_pages_are_reported(tab, tmp_path):
    "The checks catch a figure that does not load, an error output and a stderr output."
    bad_png = nbf.new_output("display_data", data={"image/png": base64.b64encode(b"not a png").decode()})
    err = nbf.new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                         traceback=["\x1b[31mTraceback (most recent call last)\x1b[0m",
                                    "ZeroDivisionError: division by zero"])
    warn = nbf.new_output("stream", name="stderr", text="UserWarning: something\n")
    run = tmp_path / "worklog-broken"
    run.mkdir()
    nbformat.write(nbf.new_notebook(cells=[nbf.new_markdown_cell("# Broken\n\n![gone](missing.png)"),
                                           nbf.new_code_cell("plot()", outputs=[bad_png, warn]),
                                           nbf.new_code_cell("1/0", outputs=[err])]), run / "02_broken.ipynb")
    index = render_pages(run)
    assert "1 error<" in index.read_text()
    r = look(tab, index.parent / "02_broken.html", tmp_path / "broken.png")
    assert len(r["broken"]) == 2 and r["images"] == 2                  # the bad PNG and the missing file
    assert len(r["stderr"]) == 2 and len(r["errors"]) == 1 and "ZeroDivisionError" in r["errors"][0]
    with pytest.raises(AssertionError, match="images that did not load"): assert_clean(r)
    r["broken"] = []
    with pytest.raises(AssertionError, match="error outputs"): assert_clean(r, stderr_ok=True)
    r["errors"], r["overflow"] = [], ["TABLE 2400px"]
    with pytest.raises(AssertionError, match="wider than the"): assert_clean(r, stderr_ok=True)


@pytest.mark.slow
def test_main_job_pages(tab, tmp_path, capsys):
    """The main job (`mathworklog-worklog`) on one real chapter, 03_rewards at preset tiny: it ends by rendering the
    pages and says where the index is; the chapter's page shows its tables, no error and no `#|` directive."""
    from mathworklog.runner import worklog_main

    worklog_main(["--preset", "tiny", "--only", "03_rewards"])
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("the worklog as pages: "))
    index = Path(line.removeprefix("the worklog as pages: "))
    r = check_run(tab, index, tmp_path / "shots", ["03_rewards"], stderr_ok=True)
    from mathworklog.runner import chapter_title
    want = chapter_title(nbformat.read(ROOT / "nbs" / "03_rewards.ipynb", as_version=4))
    assert want.startswith("Rewards") and r["03_rewards"]["title"] == want and r["03_rewards"]["tables"] >= 1
    assert re.search(r"[0-9.]+ s<", index.read_text())                     # the chapter's time, from meta.json
    page = (index.parent / "03_rewards.html").read_text()
    assert not re.search(r"#\s*\|\s*(export|hide)", page)
    with capsys.disabled(): print("\nstderr shown on the 03_rewards page:", r["03_rewards"]["stderr"])


def test_worklog_run_pages(tab, tmp_path):
    """The newest finished worklog run under runs/, when there is one: its two chapters with the most figures render
    with every figure loaded (a copy is rendered; the run folder is left as it is)."""
    runs = sorted((ROOT / "runs").glob("worklog-*/meta.json"))
    done = [m.parent for m in runs if json.loads(m.read_text()).get("status") == "done" and
            any(m.parent.glob("0[2-9]_*.ipynb"))]
    if not done: pytest.skip("no finished worklog run under runs/ (bash tools/worklog.sh makes one)")
    src = max(done, key=lambda p: p.name.split("-")[1])

    def figures(p): return sum("image/png" in o.get("data", {}) for c in nbformat.read(p, 4).cells
                               for o in c.get("outputs", []))
    best = sorted(src.glob("0[2-9]_*.ipynb"), key=figures)[-2:]
    run = tmp_path / src.name
    run.mkdir()
    for p in [src / "meta.json", *best]: shutil.copy(p, run / p.name)
    r = check_run(tab, render_pages(run), tmp_path / "shots", [p.stem for p in best], stderr_ok=True)
    for p in best: assert r[p.stem]["images"] == figures(p) > 0, (p.stem, r[p.stem]["images"])
