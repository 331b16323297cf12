"""team/alerts.yml and team/alertmanager.yml: checked by the real tools, and the 80 % alert fired
by the real Debian `prometheus` and `prometheus-alertmanager` to a webhook on 127.0.0.1 when three
machines' pushes cross it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from http_receiver import Receiver
from prometheus_servers import SCRAPE, Servers, _ready, binary, free_port

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "skill"))
from runaway_guard.money import PICO  # noqa: E402
from runaway_guard.team import metrics  # noqa: E402

RULES = ROOT / "team" / "alerts.yml"
ALERTMANAGER = ROOT / "team" / "alertmanager.yml"


def test_the_shipped_rules_and_configuration_pass_the_real_checkers():
    rules = subprocess.run([binary("promtool"), "check", "rules", str(RULES)], capture_output=True)
    assert rules.returncode == 0, rules.stdout + rules.stderr
    assert b"SUCCESS: 8 rules found" in rules.stdout
    config = subprocess.run(
        [binary("amtool"), "check-config", str(ALERTMANAGER)], capture_output=True
    )
    assert config.returncode == 0, config.stdout + config.stderr


@pytest.fixture
def alerting(tmp_path):
    """A webhook receiver, an Alertmanager sending to it at once, a Pushgateway and Prometheus
    evaluating the shipped rules with a team budget of $10 and a day's of $1000."""
    receiver = Receiver()
    port = free_port()
    config = tmp_path / "alertmanager.yml"
    config.write_text(
        "route: {receiver: hook, group_by: [alertname, team], group_wait: 0s, "
        "group_interval: 1s, repeat_interval: 1h}\n"
        f"receivers: [{{name: hook, webhook_configs: [{{url: '{receiver.url}/alerts'}}]}}]\n"
    )
    log = (tmp_path / "alertmanager.log").open("ab")
    manager = subprocess.Popen(
        [
            binary("prometheus-alertmanager"),
            f"--config.file={config}",
            f"--storage.path={tmp_path / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=log,
        stderr=log,
    )
    rules = tmp_path / "alerts.yml"
    text = RULES.read_text()
    rules.write_text(
        text.replace("vector(1000)", "vector(10)").replace("vector(50)", "vector(1000)")
    )
    servers = Servers(tmp_path / "servers")
    try:
        _ready(f"http://127.0.0.1:{port}/-/ready")
        servers.start_gateway()
        servers.start_prometheus(rules=rules, alertmanager=f"127.0.0.1:{port}")
        yield servers, receiver
    finally:
        servers.stop()
        manager.terminate()
        manager.wait(timeout=20)
        receiver.close()


def push(servers, user, machine, usd):
    month, day = time.strftime("%Y-%m"), time.strftime("%Y-%m-%d")
    body = metrics.exposition(month, day, round(usd * PICO), round(usd * PICO)).encode()
    url = servers.gateway_url + metrics.group_path("acme", user, machine)
    request = urllib.request.Request(url, data=body, method="PUT")
    with urllib.request.urlopen(request, timeout=5):
        pass


def test_three_machines_crossing_80_percent_fire_the_team_alert(alerting):
    servers, receiver = alerting
    push(servers, "alice", "laptop-a", 3)
    push(servers, "bob", "laptop-b", 3)
    servers.wait_value('team_month:runaway_guard_spend_usd:sum{team="acme"}', 6)
    time.sleep(4 * SCRAPE)  # evaluated at $6 of $10: under 80 %, nothing sent
    assert receiver.received == []
    push(servers, "alice", "ci-runner", 3)  # $9: 90 %
    got = receiver.wait(1, seconds=30)
    assert got, "no alert reached the webhook"
    alerts = [alert for _, _, data in got for alert in json.loads(data)["alerts"]]
    assert {alert["labels"]["alertname"] for alert in alerts} == {"RunawayGuardTeamMonth80"}
    alert = alerts[0]
    assert alert["status"] == "firing" and alert["labels"]["team"] == "acme"
    assert alert["labels"]["month"] == time.strftime("%Y-%m")
    assert (
        "80 %" in alert["annotations"]["summary"] and "$9.00" in alert["annotations"]["description"]
    )
