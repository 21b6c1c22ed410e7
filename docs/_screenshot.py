"""Screenshot a page of the built site (default: the `ByteBeamState` API entry).

Serves the site folder with `python -m http.server` on a free port and opens
the page in Debian's chromium through playwright; `playwright install` is
never needed. Used to make docs/images/docs_site_bytebeamstate.png:

    make docs && .venv/bin/python docs/_screenshot.py
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the site server did not answer at {url}") from None
            time.sleep(0.1)


def screenshot(site: Path, page: str, anchor: str, out: Path, dark: bool = False) -> Path:
    """Save a 1280x900 picture of `page#anchor` of the built `site` to `out`."""
    from playwright.sync_api import sync_playwright

    if not (site / page).is_file():
        raise FileNotFoundError(f"{site / page} does not exist: build the site first (make docs)")
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=site,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}/"
        _wait_for(base)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            ctx = browser.new_context(
                viewport={"width": 1280, "height": 900},
                color_scheme="dark" if dark else "light",
            )
            tab = ctx.new_page()
            tab.goto(f"{base}{page}#{anchor}", wait_until="networkidle")
            tab.wait_for_timeout(300)
            out.parent.mkdir(parents=True, exist_ok=True)
            tab.screenshot(path=str(out))
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    return out


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", default=str(root / "site"))
    parser.add_argument("--page", default="api/bytes.html")
    parser.add_argument("--anchor", default="genlm_lab.bytes.ByteBeamState")
    parser.add_argument(
        "-o", "--out", default=str(root / "docs/images/docs_site_bytebeamstate.png")
    )
    args = parser.parse_args()
    print(screenshot(Path(args.site), args.page, args.anchor, Path(args.out)))


if __name__ == "__main__":
    main()
