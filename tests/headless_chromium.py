"""Headless Chromium, driven over the Chrome DevTools Protocol (CDP), network cut.

Chromium is started with a fresh profile and ``--remote-debugging-port=0``; it
writes the port it chose into the profile (``DevToolsActivePort``), and
``Chromium.call`` sends protocol commands over a WebSocket (the
``websocket-client`` package, in the test extra). Every request the browser
would send, loopback included (``<-loopback>``), goes to a proxy at 127.0.0.1:9,
where nothing listens: Chromium's own background requests (network time,
accounts, which it makes even with ``--disable-background-networking``) cannot
leave the machine either. A page opened with ``offline=True`` is also put
offline by the protocol (``Network.emulateNetworkConditions``), and every
event (requests, console messages) is kept in ``Chromium.events``.
"""

import json
import shutil
import subprocess
import time
from pathlib import Path

CHROMIUM = next(
    (
        path
        for name in ("chromium", "chromium-browser", "google-chrome")
        if (path := shutil.which(name))
    ),
    None,
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--remote-debugging-port=0",
]


class Chromium:
    """A headless Chromium: ``call`` sends a command; ``events`` keeps every event."""

    def __init__(self, profile, width=1280, height=1600, timeout=60):
        import websocket  # websocket-client

        profile = Path(profile)
        profile.mkdir(parents=True, exist_ok=True)
        self.events = []  # (session id, method, params), in the order they came
        self._last_id = 0
        self._log = open(profile / "chromium.log", "wb")  # closed in close()
        self.process = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--window-size={width},{height}", f"--user-data-dir={profile}"],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.is_file() and len(port_file.read_text().split()) == 2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"Chromium did not start; see {profile / 'chromium.log'}")
            time.sleep(0.1)
        port, path = port_file.read_text().split()
        self._socket = websocket.create_connection(
            f"ws://127.0.0.1:{port}{path}", timeout=timeout, suppress_origin=True
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        socket = getattr(self, "_socket", None)
        if socket is not None:
            try:
                self.call("Browser.close")
            except Exception:  # the browser may go before it answers
                pass
            socket.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()

    def _receive(self):
        message = json.loads(self._socket.recv())
        if "method" in message:
            self.events.append((message.get("sessionId"), message["method"], message["params"]))
        return message

    def call(self, method, session=None, **params):
        """Send one command (to a tab's ``session``, else the browser); its result."""
        self._last_id += 1
        command = {"id": self._last_id, "method": method, "params": params}
        if session:
            command["sessionId"] = session
        self._socket.send(json.dumps(command))
        while (message := self._receive()).get("id") != self._last_id:
            pass
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return message["result"]

    def wait_for(self, method, session):
        """The parameters of the tab's first event ``method`` (waiting for it if need be)."""
        seen = 0
        while True:
            for s, m, params in self.events[seen:]:
                if (s, m) == (session, method):
                    return params
            seen = len(self.events)
            self._receive()

    def open(self, url, offline=True):
        """A new tab, loaded with ``url``; its session id, for ``call``."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session)
        if offline:
            self.call(
                "Network.emulateNetworkConditions",
                session,
                offline=True,
                latency=0,
                downloadThroughput=-1,
                uploadThroughput=-1,
            )
        self.events.clear()
        self.call("Page.navigate", session, url=url)
        self.wait_for("Page.loadEventFired", session)
        return session

    def evaluate(self, session, expression):
        """The value of a JavaScript expression in the tab (anything JSON can hold)."""
        result = self.call("Runtime.evaluate", session, expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r} failed: {result['exceptionDetails']}")
        return result["result"].get("value")
