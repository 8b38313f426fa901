"""pytest configuration shared by the unit tests and nbval.

nbval 0.11 compares every MIME type of a checked cell except images, `text/html`
included, so a DataFrame's HTML or a trace table would fail on whitespace alone. Checked
cells are compared through their plain text; HTML, JavaScript and stderr are skipped.
"""


def pytest_collectstart(collector):
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("text/html", "application/javascript", "stderr")
