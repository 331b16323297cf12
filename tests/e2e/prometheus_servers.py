"""The real Debian `prometheus` and `prometheus-pushgateway` on 127.0.0.1, for the team tests.

tests/e2e/prometheus_install.sh installs them (tests/run calls it). A missing binary FAILS the
test, never skips it. Each Servers instance picks free ports, keeps its files in its own folder
(the gateway's persistence file too: Debian's default is /var/lib/prometheus), scrapes the
gateway every SCRAPE seconds with honor_labels: true (as README's "For teams" says), and stops
what it started by pid.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

SCRAPE = 0.5  # seconds between Prometheus' scrapes of the gateway
INSTALL_HINT = "run `bash tests/e2e/prometheus_install.sh` (apt-get install prometheus ...)"


def binary(name: str) -> str:
    path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else "")
    if not path:
        pytest.fail(f"{name} not found: {INSTALL_HINT}", pytrace=False)
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ready(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} not ready after {timeout} s")
        time.sleep(0.05)


class Servers:
    """One Pushgateway and one Prometheus scraping it."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.gateway_port = free_port()
        self.prometheus_port = free_port()
        self.gateway_url = f"http://127.0.0.1:{self.gateway_port}"
        self.prometheus_url = f"http://127.0.0.1:{self.prometheus_port}"
        self.persistence = self.root / "pushgateway.data"
        self.gateway = None
        self.prometheus = None

    def start(self) -> Servers:
        self.start_gateway()
        self.start_prometheus()
        return self

    def start_gateway(self, persist: bool = True) -> None:
        argv = [
            binary("prometheus-pushgateway"),
            f"--web.listen-address=127.0.0.1:{self.gateway_port}",
            f"--persistence.file={self.persistence if persist else ''}",
            "--persistence.interval=1h",  # written when it stops (SIGTERM): the restart test
        ]
        log = (self.root / "pushgateway.log").open("ab")
        self.gateway = subprocess.Popen(argv, stdout=log, stderr=log, cwd=self.root)
        _ready(f"{self.gateway_url}/-/ready")

    def start_prometheus(self, rules: Path | None = None, alertmanager: str | None = None) -> None:
        """Prometheus scraping the gateway; with rules, evaluating them every SCRAPE seconds
        and sending its alerts to the Alertmanager at that host:port."""
        config = self.root / "prometheus.yml"
        alerting = (
            f"rule_files: ['{rules}']\n"
            "alerting:\n"
            "  alertmanagers:\n"
            f"    - static_configs: [{{targets: ['{alertmanager}']}}]\n"
            if rules
            else ""
        )
        config.write_text(
            "global:\n"
            f"  scrape_interval: {int(SCRAPE * 1000)}ms\n"
            f"  scrape_timeout: {int(SCRAPE * 800)}ms\n"
            f"  evaluation_interval: {int(SCRAPE * 1000)}ms\n" + alerting + "scrape_configs:\n"
            "  - job_name: pushgateway\n"
            "    honor_labels: true\n"
            "    static_configs:\n"
            f"      - targets: ['127.0.0.1:{self.gateway_port}']\n"
        )
        argv = [
            binary("prometheus"),
            f"--config.file={config}",
            f"--storage.tsdb.path={self.root / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{self.prometheus_port}",
        ]
        log = (self.root / "prometheus.log").open("ab")
        self.prometheus = subprocess.Popen(argv, stdout=log, stderr=log, cwd=self.root)
        _ready(f"{self.prometheus_url}/-/ready")

    @staticmethod
    def _stop(process) -> None:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    def stop_gateway(self) -> None:
        self._stop(self.gateway)
        self.gateway = None

    def stop(self) -> None:
        self.stop_gateway()
        self._stop(self.prometheus)
        self.prometheus = None

    # -- reading what the servers hold

    def query(self, promql: str) -> list:
        url = f"{self.prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=5) as response:
            answer = json.load(response)
        assert answer["status"] == "success", answer
        return answer["data"]["result"]

    def value(self, promql: str) -> float | None:
        result = self.query(promql)
        return float(result[0]["value"][1]) if result else None

    def wait_value(self, promql: str, expected: float, timeout: float = 15.0) -> float:
        """Poll until the query's value is expected (to 1e-6); the time it took."""
        started = time.monotonic()
        seen = None
        while time.monotonic() - started < timeout:
            seen = self.value(promql)
            if seen is not None and abs(seen - expected) <= 1e-6:
                return time.monotonic() - started
            time.sleep(0.05)
        raise AssertionError(f"{promql} = {seen}, expected {expected} within {timeout} s")

    def groups(self) -> list:
        """The gateway's groups: their grouping labels."""
        with urllib.request.urlopen(f"{self.gateway_url}/api/v1/metrics", timeout=5) as response:
            answer = json.load(response)
        return [item["labels"] for item in answer["data"]]
