"""A real headless Chromium, driven over the Chrome DevTools Protocol on a pipe.

``--remote-debugging-pipe`` makes the browser read protocol messages (JSON, each ended by a
NUL byte) on its file descriptor 3 and write its replies and events on 4: no chromedriver,
no WebSocket client, no port. The browser is its own process group; :meth:`Browser.close`
ends that group (by the id of the process this started) even when a test failed.
``scripts/setup.d/45-browser.sh`` installs Debian's chromium.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: The longest wait for one reply or event: only a hung browser reaches it.
CAP_SECONDS = 120.0
_NAMES = ("chromium", "chromium-browser", "google-chrome")
#: argv: fd to read from, fd to write to, the browser's command line
_ON_FDS_3_4 = """import fcntl, os, sys
r, w = (fcntl.fcntl(int(fd), fcntl.F_DUPFD_CLOEXEC, 10) for fd in sys.argv[1:3])
os.dup2(r, 3)
os.dup2(w, 4)
os.execv(sys.argv[3], sys.argv[3:])
"""


def find_browser() -> str | None:
    """The Chromium executable ($OPSDK_CHROMIUM, else the first of chromium,
    chromium-browser, google-chrome on PATH), or None."""
    given = os.environ.get("OPSDK_CHROMIUM")
    if given:
        return given
    return next((p for p in map(shutil.which, _NAMES) if p), None)


class Browser:
    """One headless Chromium with a temporary profile in ``profile``."""

    def __init__(self, exe: str, profile: Path) -> None:
        to_r, to_w = os.pipe()  # we write, the browser reads on fd 3
        from_r, from_w = os.pipe()  # the browser writes on fd 4, we read
        args = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-sync",
                "--disable-background-networking", "--disable-component-update",
                "--disable-dev-shm-usage", "--window-size=1280,1000", "--remote-debugging-pipe",
                f"--user-data-dir={profile}", "about:blank"]
        # a small Python step puts the two pipe ends on fds 3 and 4, then becomes the browser
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _ON_FDS_3_4, str(to_r), str(from_w), *args],
            pass_fds=(to_r, from_w), start_new_session=True, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self._out, self._in = to_w, from_r
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        try:
            self.version = str(self.call("Browser.getVersion")["product"])
        except BaseException:
            self.close()  # a browser that never answered is ended too
            raise

    def _send(self, method: str, params: dict[str, Any] | None, session: str | None) -> int:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        return self._next

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._in], [], [], max(left, 0))
            if not ready:
                raise TimeoutError(f"no message from the browser in {CAP_SECONDS:.0f} s")
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                raise EOFError(f"the browser closed its pipe (exit code {self.proc.poll()})")
            self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        parsed: dict[str, Any] = json.loads(msg)
        return parsed

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> dict[str, Any]:
        """Send one command and return its result (events meanwhile go to ``events``)."""
        want = self._send(method, params, session)
        deadline = time.monotonic() + CAP_SECONDS
        while True:
            msg = self._read(deadline)
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result
            self.events.append(msg)

    def wait_event(self, method: str, session: str) -> dict[str, Any]:
        """The first event ``method`` of ``session`` not seen yet (waits for it)."""
        deadline = time.monotonic() + CAP_SECONDS
        for i, ev in enumerate(self.events):
            if ev.get("method") == method and ev.get("sessionId") == session:
                return self.events.pop(i)
        while True:
            msg = self._read(deadline)
            if msg.get("method") == method and msg.get("sessionId") == session:
                return msg
            self.events.append(msg)

    def open(self, url: str) -> Page:
        """A new tab showing ``url``, loaded (its load event fired)."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=session)
        self.call("Page.navigate", {"url": url}, session)
        self.wait_event("Page.loadEventFired", session)
        return Page(self, session)

    def close(self) -> None:
        """End the browser: its own Browser.close, then SIGTERM and at last SIGKILL to its
        process group (the group of the process this started)."""
        try:
            if self.proc.poll() is None:
                self._send("Browser.close", None, None)
                self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(timeout=30)
                    break
                except subprocess.TimeoutExpired:
                    continue
            for fd in (self._out, self._in):
                try:
                    os.close(fd)
                except OSError:
                    pass


class Page:
    """One tab: evaluate JavaScript, click and type as a person would, read its errors."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser, self.session = browser, session

    def js(self, expression: str) -> Any:
        """The value of ``expression`` (JSON-able), evaluated in the page."""
        r = self.browser.call("Runtime.evaluate", {"expression": expression,
                                                   "returnByValue": True}, self.session)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def _center(self, selector: str) -> tuple[float, float]:
        box = self.js(f"""(function () {{
            var el = document.querySelector({json.dumps(selector)});
            el.scrollIntoView({{block: "center"}});
            var r = el.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2];
        }}())""")
        return float(box[0]), float(box[1])

    def click(self, selector: str) -> None:
        """A left mouse click at the middle of the first element matching ``selector``."""
        x, y = self._center(selector)
        for kind in ("mousePressed", "mouseReleased"):
            self.browser.call("Input.dispatchMouseEvent", {
                "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}, self.session)

    def type(self, selector: str, text: str) -> None:
        """Click into the field matching ``selector`` and type ``text`` (input events)."""
        self.click(selector)
        self.browser.call("Input.insertText", {"text": text}, self.session)

    def choose(self, selector: str, value: str) -> None:
        """Pick ``value`` in the ``<select>`` matching ``selector`` with the keyboard: focus
        it, then press the arrow keys until it shows the value (each fires its events)."""
        sel = json.dumps(selector)
        options = self.js(f"Array.from(document.querySelector({sel}).options)"
                          ".map(function (o) { return o.value; })")
        here = self.js(f"(function () {{ var s = document.querySelector({sel}); s.focus(); "
                       "return s.value; }())")
        steps = options.index(value) - options.index(here)
        key, code = ("ArrowDown", 40) if steps > 0 else ("ArrowUp", 38)
        for _ in range(abs(steps)):
            for kind in ("keyDown", "keyUp"):
                self.browser.call("Input.dispatchKeyEvent", {
                    "type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code},
                    self.session)

    def errors(self) -> list[str]:
        """JavaScript exceptions, console errors and error log entries of this tab."""
        self.js("0")  # drain what arrived before now
        out = []
        for ev in self.browser.events:
            if ev.get("sessionId") != self.session:
                continue
            p = ev.get("params", {})
            if ev.get("method") == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('exception', p)}")
            elif ev.get("method") == "Runtime.consoleAPICalled" and p.get("type") in (
                    "error", "assert"):
                out.append(f"console.{p['type']}: {p.get('args')}")
            elif ev.get("method") == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(f"log: {p['entry'].get('text')}")
        return out

    def requests(self) -> list[str]:
        """The URL of every request this tab made."""
        self.js("0")
        return [ev["params"]["request"]["url"] for ev in self.browser.events
                if ev.get("sessionId") == self.session
                and ev.get("method") == "Network.requestWillBeSent"]
