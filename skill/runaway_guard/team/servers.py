"""The requests to the Pushgateway and Prometheus: each with an overall deadline, its answer
size-limited, no redirect followed; Prometheus' answer read as the four sums or refused."""

import time

from .. import jsonio
from ..money import PICO
from .metrics import PARTS, query_text

TIMEOUT = 3.0  # seconds a socket may wait for one step of a request (connecting, a read)
REQUEST_S = 8.0  # seconds one request may take, its whole answer read (a server may trickle)
MAX_ANSWER = 1 << 20  # bytes: a longer answer is refused


def _request(method, url, body=None, ends=None):
    """One HTTP request; the response body. It takes REQUEST_S at most, and never past ends
    (time.monotonic()), whatever the server does: a server that trickles its answer a byte at a
    time stays under every socket timeout, and a name lookup has none."""
    import threading

    limit = REQUEST_S if ends is None else min(REQUEST_S, ends - time.monotonic())
    if limit <= 0:
        raise TimeoutError("no time left in this refresh for it")
    outcome = []

    def exchange():
        try:
            outcome.append(_exchange(method, url, body, min(TIMEOUT, limit)))
        except BaseException as error:
            outcome.append(error)

    worker = threading.Thread(target=exchange, daemon=True)  # left behind if it overruns
    worker.start()
    worker.join(limit)
    if not outcome:
        raise TimeoutError(f"no whole answer within {limit:.0f} s")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _exchange(method, url, body, timeout):
    """The request itself. Credentials in the URL go as basic auth, to that origin only: a
    redirect is not followed (urllib would send the Authorization header to wherever it
    points), it is an error that says where it pointed."""
    import urllib.parse
    import urllib.request

    split = urllib.parse.urlsplit(url)
    headers = {"User-Agent": "runaway-guard"}
    if split.username is not None:
        import base64

        user = urllib.parse.unquote(split.username)
        secret = urllib.parse.unquote(split.password or "")
        token = base64.b64encode(f"{user}:{secret}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
        url = urllib.parse.urlunsplit(split._replace(netloc=split.netloc.rpartition("@")[2]))
    if body is not None:
        headers["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8"
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    with urllib.request.build_opener(_no_redirect()).open(request, timeout=timeout) as response:
        answer = response.read(MAX_ANSWER + 1)
    if len(answer) > MAX_ANSWER:
        raise ValueError(f"an answer longer than {MAX_ANSWER >> 20} MiB, ignored")
    return answer


def _no_redirect():
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req, fp, code, msg, headers, newurl):
            from .. import log

            fp.close()
            raise urllib.error.URLError(
                f"HTTP {code}, a redirect to {log.redact_url(newurl)}, not followed: "
                "set the URL it points to"
            )

    return NoRedirect


def _error_text(error):
    reason = getattr(error, "reason", None)
    code = getattr(error, "code", None)
    if code is not None:
        return f"HTTP {code}"
    return str(reason or error) or type(error).__name__


def read_sums(settings, machine, month, day, ends=None):
    """{part: picodollars} from Prometheus; a part no series matched is absent. Anything but
    Prometheus' vector of four finite sums of spend (never negative) is a ValueError: the
    whole answer is ignored, the error recorded."""
    import urllib.parse

    promql = query_text(settings.team, settings.user, machine, month, day)
    query = urllib.parse.urlencode({"query": promql})
    url = f"{settings.prometheus_url}/api/v1/query?{query}"
    answer = jsonio.loads(_request("GET", url, ends=ends))
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, dict) or answer.get("status") != "success":
        error = answer.get("error") if isinstance(answer, dict) else None
        raise ValueError(f"no success: {str(error)[:200] if error else 'not its API answer'}")
    result = data.get("result")
    if not isinstance(result, list) or len(result) > len(PARTS):
        raise ValueError(f"not a vector of up to {len(PARTS)} sums")
    sums = {}
    for item in result:
        metric = item.get("metric") if isinstance(item, dict) else None
        part = metric.get("part") if isinstance(metric, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        if part not in PARTS or part in sums or not isinstance(value, list) or len(value) != 2:
            raise ValueError("a result that is not one of the sums asked for")
        sums[part] = _sum(part, value[1])
    return sums


def _sum(part, text):
    """One sum in picodollars from Prometheus' text of a sample value."""
    amount = float(text) if isinstance(text, str) and len(text) <= 40 else float("nan")
    if not 0 <= amount < 1e12:  # NaN fails too; a sum of spend is never negative
        raise ValueError(f"{str(text)[:40]!r} for {part}, not a sum of spend")
    return round(amount * PICO)
