"""The live LicenseGate the tests call: scripts/sdk-live-server.mjs (a fresh SQLite file, a free
port, seeded through the CLI and the HTTP API), started once for the whole run."""
import json
import os
import subprocess
import sys
import urllib.request
from typing import Any, Dict

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))


class LiveServer:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            ["node", os.path.join(ROOT, "scripts", "sdk-live-server.mjs")],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline()
        try:
            self.seed: Dict[str, Any] = json.loads(line)
        except ValueError:
            self.process.kill()
            raise RuntimeError("scripts/sdk-live-server.mjs did not start (is dist/ built? `npm run build`)")

    def _command(self, command: str, answer: str) -> None:
        self.process.stdin.write(f"{command}\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline().strip()
        if line != answer:
            raise RuntimeError(f"sdk-live-server: {command} answered {line}")

    def stop(self) -> None:
        """Stops the service (the database stays) until start()."""
        self._command("stop", "stopped")

    def start(self) -> None:
        self._command("start", "started")

    def api(self, method: str, path: str) -> Dict[str, Any]:
        """A management call with the seeded API key; the decoded envelope."""
        request = urllib.request.Request(
            self.seed["base_url"] + path,
            data=b"" if method == "POST" else None,
            method=method,
            headers={"Accept": "application/json", "X-API-KEY": self.seed["api_key"]},
        )
        with urllib.request.urlopen(request, timeout=30) as res:
            return json.loads(res.read())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


@pytest.fixture(scope="session")
def live() -> Any:
    server = LiveServer()
    yield server
    server.close()


@pytest.fixture(scope="session")
def vectors() -> Dict[str, Any]:
    with open(os.path.join(ROOT, "sdk", "vectors", "vectors.json"), encoding="utf-8") as f:
        return json.load(f)
