"""sysbench: command lines, running it, and parsing its output.

The parser reads both report formats:
- 1.0.x: "General statistics: total time: ...s / total number of events: N"
- 1.1.x: "Throughput: events/s (eps): ... / time elapsed: ...s / total number of events: N"
and the `--report-interval` lines, which are the same in both:
  [ 5s ] thds: 1 tps: 224.01 qps: 2240.06 (r/w/o: 0.00/1616.04/624.02) lat (ms,95%): 8.43 err/s: 0.00 reconn/s: 0.00
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perfci.model.connection import Connection
from perfci.model.result import Interval
from perfci.util.errors import BadInput, InfraFailure


def render_option(name: str, value) -> str:
    if isinstance(value, bool):
        value = "on" if value else "off"
    return f"--{name}={value}"


def shown(args: list[str]) -> str:
    """The command line as recorded in results and logs: the password masked."""
    return shlex.join(re.sub(r"^(--mysql-password=).+$", r"\1***", a) for a in args)


def command(script: str, action: str, conn: Connection, options: dict) -> list[str]:
    """A sysbench command line; `options` are given as in the scenario (without --)."""
    where = [f"--mysql-socket={conn.socket}"] if conn.socket else [f"--mysql-host={conn.host}",
                                                                  f"--mysql-port={conn.port}"]
    args = ["sysbench", script, "--db-driver=mysql", *where, f"--mysql-user={conn.user}", f"--mysql-db={conn.database}"]
    if conn.auth_file:
        args.insert(2, f"--config-file={conn.auth_file}")
    args += [render_option(k, v) for k, v in options.items()]
    args.append(action)
    return args


def version() -> str:
    exe = shutil.which("sysbench")
    if not exe:
        raise BadInput("sysbench not found on PATH; install it (Debian/Ubuntu: apt-get install sysbench)")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    return out


# How long sysbench may run past its --time before the server counts as hung: its
# threads finish the event they are in (a slow transaction, a long flush stall) and
# print the report. A server whose statements never return (a latch deadlock, seen on
# MariaDB 10.11.5 with the change buffer: MDEV-33543) would otherwise hold the run
# until the job's own timeout kills it without a word.
OVERRUN_S = 120.0
STALL_READ_S = 15.0  # how long the hung server's running statements are waited for


def time_limit(args: list[str]) -> float | None:
    """sysbench's --time of a command line (None: none given or 0, i.e. unlimited)."""
    found = [a.split("=", 1)[1] for a in args if a.startswith("--time=")]
    try:
        limit = float(found[-1]) if found else 0.0
    except ValueError:
        return None
    return limit or None


def run(args: list[str], on_line: Callable[[str], None] | None = None, log_path: Path | None = None,
        stalled: Callable[[], str] | None = None, overrun_s: float = OVERRUN_S) -> str:
    """Run sysbench, streaming stdout lines to `on_line`; return stdout.

    A non-zero exit raises InfraFailure with the tail of stderr (or stdout, where
    sysbench 1.0 prints its FATAL lines). A run still going `overrun_s` past its --time
    is killed and raises InfraFailure naming the hang, with what `stalled()` reads
    from the server then (its running statements)."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    lines: list[str] = []
    limit = time_limit(args)
    hung: list[str] = []

    def read_server() -> None:
        try:
            hung.append(stalled() if stalled else "")
        except Exception as exc:  # noqa: BLE001 - a hung server may not answer this either
            hung.append(f"(the server did not answer either: {exc})")

    def watchdog() -> None:
        reader = threading.Thread(target=read_server, daemon=True)
        reader.start()
        reader.join(STALL_READ_S)
        if not hung:
            hung.append(f"(the server did not answer within {STALL_READ_S:.0f} s either)")
        proc.kill()

    timer = threading.Timer(limit + overrun_s, watchdog) if limit is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if on_line:
                on_line(line.rstrip("\n"))
        stderr = proc.stderr.read() if proc.stderr else ""
        rc = proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        if timer is not None:
            timer.cancel()
    stdout = "".join(lines)
    if log_path is not None:
        log_path.write_text(stdout + ("\n--- stderr ---\n" + stderr if stderr else ""))
    if hung:
        last = "".join(lines[-5:]).strip()
        raise InfraFailure(f"sysbench {args[1]} {args[-1]} was still running {overrun_s:.0f} s after its --time of "
                           f"{limit:g} s: the server stopped answering (killed); its running statements:",
                           detail="\n".join(x for x in (hung[0].strip(), "sysbench's last lines:\n" + last) if x))
    if rc != 0:
        tail = "\n".join((stderr.strip() or stdout.strip()).splitlines()[-15:])
        raise InfraFailure(f"sysbench {args[1]} {args[-1]} failed with exit code {rc}", detail=tail)
    return stdout


# ---------------------------------------------------------------- parsing

_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_INTERVAL_RE = re.compile(
    rf"^\[\s*{_NUM}s\s*\]\s+thds:\s*(\d+)\s+tps:\s*{_NUM}\s+qps:\s*{_NUM}\s+"
    rf"\(r/w/o:\s*{_NUM}/{_NUM}/{_NUM}\)\s+lat\s+\(ms,\s*(\d+(?:\.\d+)?)%\):\s*{_NUM}\s+"
    rf"err/s:?\s*{_NUM}\s+reconn/s:?\s*{_NUM}"
)


def parse_interval(line: str) -> Interval | None:
    m = _INTERVAL_RE.match(line.strip())
    if not m:
        return None
    t, thds, tps, qps, r, w, o, pct, lat, err, reconn = m.groups()
    return Interval(t=float(t), threads=int(thds), tps=float(tps), qps=float(qps),
                    qps_read=float(r), qps_write=float(w), qps_other=float(o),
                    latency_pct=float(pct), latency_ms=float(lat),
                    errors_per_s=float(err), reconnects_per_s=float(reconn))


@dataclass(frozen=True)
class SysbenchReport:
    """A finished run's report: its final figures by name (tps, qps, latency_ms_p95, ...;
    the percentile's name follows --percentile) and its interval lines."""

    sysbench_version: str | None
    metrics: dict[str, float]
    intervals: list[Interval]


def _field(text: str, label: str, pattern: str = _NUM) -> str | None:
    m = re.search(rf"^\s*{re.escape(label)}\s+{pattern}", text, re.MULTILINE)
    return m.group(1) if m else None


def parse_report(text: str) -> SysbenchReport:
    """The final report of a sysbench OLTP run as flat metrics, plus the interval series.

    Raises ValueError when the text holds no final report."""
    if "SQL statistics:" not in text:
        raise ValueError("no 'SQL statistics:' section: not a finished sysbench run report")
    version = _field(text, "sysbench", r"(\d+\.\d+\.\d+)")
    duration = _field(text, "total time:") or _field(text, "time elapsed:")
    events = _field(text, "total number of events:")
    trx = re.search(rf"^\s*transactions:\s+(\d+)\s+\(\s*{_NUM} per sec\.\)", text, re.MULTILINE)
    queries = re.search(rf"^\s*queries:\s+(\d+)\s+\(\s*{_NUM} per sec\.\)", text, re.MULTILINE)
    ignored = re.search(rf"^\s*ignored errors:\s+(\d+)\s+\(\s*{_NUM} per sec\.\)", text, re.MULTILINE)
    reconnects = re.search(rf"^\s*reconnects:\s+(\d+)\s+\(\s*{_NUM} per sec\.\)", text, re.MULTILINE)
    lat_section = text.split("Latency (ms):", 1)[1] if "Latency (ms):" in text else ""
    pct = re.search(rf"^\s*(\d+)th percentile:\s+{_NUM}", lat_section, re.MULTILINE)
    required = {"total time": duration, "events": events, "transactions": trx, "queries": queries}
    missing = [k for k, v in required.items() if v is None]
    if missing or duration is None or events is None or trx is None or queries is None:
        raise ValueError(f"sysbench report lacks: {', '.join(missing)}")
    duration_s = float(duration)
    metrics: dict[str, float] = {
        "duration_s": duration_s,
        "events": int(events),
        "transactions": int(trx.group(1)),
        "tps": float(trx.group(2)),
        "queries": int(queries.group(1)),
        "qps": float(queries.group(2)),
        "errors": int(ignored.group(1)) if ignored else 0,
        "errors_per_s": float(ignored.group(2)) if ignored else 0.0,
        "reconnects": int(reconnects.group(1)) if reconnects else 0,
        "reconnects_per_s": float(reconnects.group(2)) if reconnects else 0.0,
    }
    for kind in ("read", "write", "other"):
        count = _field(text, f"{kind}:", r"(\d+)")
        if count is not None:
            metrics[f"queries_{kind}"] = int(count)
            metrics[f"qps_{kind}"] = round(int(count) / duration_s, 2) if duration_s else 0.0
    for label, key in (("min:", "latency_ms_min"), ("avg:", "latency_ms_avg"), ("max:", "latency_ms_max")):
        value = _field(lat_section, label)
        if value is not None:
            metrics[key] = float(value)
    if pct:
        metrics[f"latency_ms_p{pct.group(1)}"] = float(pct.group(2))
    for key, tail in tail_latencies(text, int(events)).items():
        metrics.setdefault(key, tail)
    intervals = [iv for iv in (parse_interval(line) for line in text.splitlines()) if iv]
    return SysbenchReport(version, metrics, intervals)


# The tails a run records from sysbench's latency histogram (--histogram=on: every
# measured run asks for it; sysbench keeps the histogram anyway, it only prints it), by
# metric name. A percentile is recorded only where at least TAIL_EVENTS_BEYOND
# transactions lie beyond it: p99 from 1,000 transactions, p99.9 from 10,000 (fewer, and
# it is the slowest one or two transactions, not a tail).
TAILS = {"latency_ms_p99": 0.99, "latency_ms_p99_9": 0.999}
TAIL_EVENTS_BEYOND = 10
_HISTOGRAM_ROW = re.compile(rf"^\s*{_NUM} \|\**\s*(\d+)$", re.MULTILINE)


def histogram(text: str) -> list[tuple[float, int]]:
    """sysbench's latency histogram: (bucket value in ms, count) in increasing value."""
    if "Latency histogram" not in text:
        return []
    section = text.split("Latency histogram", 1)[1].split("SQL statistics:", 1)[0]
    return [(float(v), int(c)) for v, c in _HISTOGRAM_ROW.findall(section)]


def tail_latencies(text: str, events: int) -> dict[str, float]:
    """p99 and p99.9 from the histogram, as sysbench computes its own percentile: the
    value of the bucket where the cumulative count first reaches the share."""
    rows = histogram(text)
    total = sum(c for _, c in rows)
    out: dict[str, float] = {}
    for key, share in TAILS.items():
        if not total or events * (1 - share) < TAIL_EVENTS_BEYOND - 1e-9:
            continue
        cumulative = 0
        for value, count in rows:
            cumulative += count
            if cumulative >= share * total:
                out[key] = value
                break
    return out
