"""The sysbench report parser on real 1.0.20 and 1.1.0 output."""

import pytest

from perfci.model.connection import Connection
from perfci.run.sysbench import command, histogram, parse_interval, parse_report, run, tail_latencies, time_limit
from perfci.util.errors import InfraFailure

from conftest import DATA


def test_parses_sysbench_1_0_20_report_and_intervals():
    rep = parse_report((DATA / "sysbench-1.0.20-oltp_write_only.txt").read_text())
    m = rep.metrics
    assert rep.sysbench_version == "1.0.20"
    assert m["transactions"] == 8104 and m["tps"] == 270.10
    assert m["queries"] == 81040 and m["qps"] == 2701.02
    assert (m["queries_read"], m["queries_write"], m["queries_other"]) == (0, 70377, 10663)
    assert m["qps_write"] == pytest.approx(70377 / 30.0028, abs=0.01)
    assert m["duration_s"] == 30.0028 and m["events"] == 8104
    assert (m["latency_ms_min"], m["latency_ms_avg"], m["latency_ms_max"], m["latency_ms_p95"]) == (0.41, 3.70, 23.25, 7.17)
    assert m["errors"] == 0 and m["reconnects"] == 0
    assert len(rep.intervals) == 30
    first = rep.intervals[0]
    assert first.model_dump() == {"t": 1.0, "threads": 1, "tps": 76.75, "qps": 775.47, "qps_read": 0.0,
                                  "qps_write": 472.46, "qps_other": 303.01, "latency_pct": 95.0, "latency_ms": 20.37,
                                  "errors_per_s": 0.0, "reconnects_per_s": 0.0}


def test_parses_sysbench_1_1_report_with_throughput_section():
    rep = parse_report((DATA / "sysbench-1.1.0-oltp_write_only.txt").read_text())
    m = rep.metrics
    assert rep.sysbench_version == "1.1.0"
    assert m["duration_s"] == 600.0013 and m["events"] == 184677
    assert m["tps"] == 307.79 and m["qps"] == 3077.94
    assert m["queries_write"] == 1193318 and m["latency_ms_p95"] == 5.57
    assert [iv.t for iv in rep.intervals] == [599.0, 600.0]
    assert rep.intervals[-1].qps_other == 1020.99


def test_interval_line_with_errors_and_99th_percentile():
    iv = parse_interval("[ 12s ] thds: 32 tps: 1234.50 qps: 24690.00 (r/w/o: 17283.00/4938.00/2469.00) "
                        "lat (ms,99%): 101.13 err/s: 3.00 reconn/s: 0.50")
    assert iv is not None and iv.threads == 32 and iv.latency_pct == 99.0 and iv.latency_ms == 101.13
    assert iv.errors_per_s == 3.0 and iv.reconnects_per_s == 0.5
    assert parse_interval("Threads started!") is None


def test_unfinished_output_is_rejected():
    text = (DATA / "sysbench-1.0.20-oltp_write_only.txt").read_text().split("SQL statistics:")[0]
    with pytest.raises(ValueError, match="SQL statistics"):
        parse_report(text)


def test_command_renders_booleans_as_on_off():
    conn = Connection("127.0.0.1", 3307, "u", "sbtest", "/w/sysbench-auth.cnf")
    args = command("oltp_write_only", "run", conn, {"skip_trx": True, "threads": 4, "db-ps-mode": "disable"})
    assert args[2] == "--config-file=/w/sysbench-auth.cnf" and not any("password" in a for a in args)
    assert args[:2] == ["sysbench", "oltp_write_only"] and args[-1] == "run"
    assert "--skip_trx=on" in args and "--threads=4" in args and "--db-ps-mode=disable" in args
    assert "--mysql-port=3307" in args


@pytest.mark.slow
def test_a_run_still_going_past_its_time_is_killed_and_named_a_hang_with_the_servers_statements(tmp_path):
    """A server whose statements never return keeps sysbench past its --time: it is
    killed and the error says so, with the running statements the server reports."""
    stuck = tmp_path / "sysbench"
    stuck.write_text("#!/bin/sh\necho '[ 1s ] thds: 4 tps: 0.00 qps: 0.00'\nexec sleep 600\n")
    stuck.chmod(0o755)
    with pytest.raises(InfraFailure) as failed:
        run([str(stuck), "oltp_write_only", "--time=1", "run"], overrun_s=0.5,
            stalled=lambda: "- id 9 (perfci) 328 s, Update: INSERT INTO sbtest1 VALUES (?)")
    assert str(failed.value).startswith("sysbench oltp_write_only run was still running 0 s after its --time of 1 s: "
                                        "the server stopped answering (killed)")
    assert "INSERT INTO sbtest1" in failed.value.detail and "tps: 0.00" in failed.value.detail


@pytest.mark.slow
def test_a_server_that_does_not_answer_the_watchdog_either_is_said_so(tmp_path):
    stuck = tmp_path / "sysbench"
    stuck.write_text("#!/bin/sh\nexec sleep 600\n")
    stuck.chmod(0o755)

    def refused() -> str:
        raise OSError("Lost connection")

    with pytest.raises(InfraFailure) as failed:
        run([str(stuck), "oltp_read_only", "--time=1", "run"], overrun_s=0.2, stalled=refused)
    assert "(the server did not answer either: Lost connection)" in failed.value.detail
    assert time_limit(["sysbench", "--time=0", "run"]) is None and time_limit(["sysbench", "--time=30"]) == 30.0


def test_tails_come_from_the_histogram_as_sysbench_computes_its_own_percentile():
    text = (DATA / "sysbench-1.0.20-oltp_write_only-histogram.txt").read_text()
    rep = parse_report(text)
    m = rep.metrics
    assert m["events"] == 3000 and len(rep.intervals) == 10  # the histogram rows are no interval lines
    assert m["latency_ms_p99"] == 45.793  # 3,000 transactions: 30 beyond p99
    assert "latency_ms_p99_9" not in m  # 3 beyond p99.9: the slowest few, not a tail
    rows = histogram(text)
    assert sum(c for _, c in rows) == 3000 and rows == sorted(rows)
    # the same rule gives sysbench's own 95th percentile (11.65 ms, printed to 2 places)
    cumulative, p95 = 0, None
    for value, count in rows:
        cumulative += count
        if cumulative >= 0.95 * 3000:
            p95 = value
            break
    assert p95 == pytest.approx(m["latency_ms_p95"], abs=0.005)
    assert tail_latencies(text, 10_000).keys() == {"latency_ms_p99", "latency_ms_p99_9"}
    assert tail_latencies(text, 999) == {}
    assert tail_latencies((DATA / "sysbench-1.0.20-oltp_write_only.txt").read_text(), 8104) == {}  # no histogram

