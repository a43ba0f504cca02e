"""run/work.py: counting a server's work per burst. The parsers on recorded output, the
checks made before any server starts, and perf's counting mode attached for real to a
busy process (with a software event: this VM has no PMU)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perfci.host import host_checks
from perfci.providers.capabilities import KnownOptions
from perfci.run import work
from perfci.util.errors import BadInput, InfraFailure

DATA = Path(__file__).resolve().parents[1] / "data"


def test_a_callgrind_dump_total_is_its_summary_line():
    assert work.summary_of((DATA / "callgrind" / "mariadbd-10.11.19-dump.txt").read_text()) == 412263839
    with pytest.raises(ValueError):
        work.summary_of("events: Ir\n")


def test_perf_stat_counts_are_read_from_its_csv():
    """This VM's real line (no PMU) is an infrastructure failure that says so; a count
    in perf-stat(1)'s CSV layout (value, unit, event, run time, share, metric, unit: the
    same layout `perf stat -x,` printed for task-clock here) is read as an integer, also
    under a hybrid CPU's event name."""
    with pytest.raises(InfraFailure, match="instructions:u <not supported> on this host"):
        work.parse_perf_stat("<not supported>,,instructions:u,0,100.00,,\n")
    assert work.parse_perf_stat("Events disabled\nEvents enabled\n"
                                "48123456,,instructions:u,499497583,100.00,1.21,insn per cycle\n") == 48123456
    assert work.parse_perf_stat("7001,,cpu_core/instructions/u,1000,100.00,,\n") == 7001
    with pytest.raises(InfraFailure, match="printed no instructions:u count"):
        work.parse_perf_stat("499.50,msec,task-clock,499497583,100.00,0.998,CPUs utilized\n")


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed (scripts/install-deps)")
def test_the_pmu_counter_attaches_to_a_running_process_over_perfs_control_fifo():
    """The PMU counter's own path for real, with the software event task-clock (what this
    VM counts): enabled once perf acknowledged, ended with SIGINT, its count read; the
    instructions event here is refused as the VM's perf refuses it."""
    busy = subprocess.Popen(["sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"])
    try:
        counter = work.PmuCounter(busy.pid, event="task-clock")
        counter.start()
        busy.wait(timeout=60)
        assert counter.stop() > 0  # milliseconds of CPU, truncated
        if work.pmu_missing():
            other = subprocess.Popen(["sleep", "5"])
            counting = work.PmuCounter(other.pid)
            counting.start()
            with pytest.raises(InfraFailure, match="no PMU"):
                counting.stop()
            other.kill()
            other.wait()
    finally:
        busy.kill()
        busy.wait()


def test_the_statement_loop_is_found_in_a_binarys_dynamic_symbols(tmp_path):
    """A real ELF binary exporting do_command(THD*, bool), as MariaDB 10.5+ does: its
    demangled signature is what callgrind toggles on; a binary without it is bad input
    that names the symbol and the way out."""
    if shutil.which("c++") is None or shutil.which("nm") is None:
        pytest.skip("no C++ compiler or nm (build-essential, binutils)")
    source = tmp_path / "server.cc"
    source.write_text("struct THD {};\nint do_command(THD*, bool) { return 0; }\nint main() { return 0; }\n")
    binary = tmp_path / "mariadbd"
    subprocess.run(["c++", "-rdynamic", "-o", str(binary), str(source)], check=True)
    assert work.loop_symbol(binary, "mariadb") == "do_command(THD*, bool)"
    with pytest.raises(BadInput, match=r"no symbol do_command\(\.\.\.\) \(the mysql statement loop\).*--measure time"):
        work.loop_symbol(Path(shutil.which("true") or "/bin/true"), "mysql")
    with pytest.raises(BadInput, match="flavor 'tidb' has no known statement loop"):
        work.loop_symbol(binary, "tidb")


def test_the_config_a_server_needs_under_valgrind_is_what_it_has():
    known = KnownOptions({"innodb_use_native_aio", "innodb_buffer_pool_size_max"})
    assert work.server_config(known, "512M") == {"innodb_use_native_aio": 0, "innodb_buffer_pool_size_max": "512M"}
    assert work.server_config(KnownOptions({"innodb_use_native_aio"}), "512M") == {"innodb_use_native_aio": 0}
    # MariaDB 11.4 makes an RSA key for its own TLS certificate at startup: under valgrind, minutes
    assert work.server_config(KnownOptions({"ssl"}), None) == {"ssl": 0}
    # MySQL 8.0: a user thread waiting for the redo log writer spins (a counted update: 75 % spread)
    assert work.server_config(KnownOptions({"innodb_log_spin_cpu_pct_hwm", "innodb_log_wait_for_flush_spin_hwm"}),
                              None) == {"innodb_log_spin_cpu_pct_hwm": 0, "innodb_log_wait_for_flush_spin_hwm": 0}


def test_without_valgrind_callgrind_cannot_count_and_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "valgrind and vgdb not found" in (work.tool_missing("callgrind") or "")
    assert "apt-get install valgrind" in (work.tool_missing("callgrind") or "")
    assert work.choose_method("auto") == "callgrind"  # no perf on this PATH: no PMU counting


def test_doctor_says_how_work_would_be_counted(tmp_path):
    events = tmp_path / "bus" / "event_source" / "devices" / "cpu" / "events"
    found = host_checks.pmu(tmp_path, tmp_path, which=lambda name: f"/usr/bin/{name}")
    assert found.status == "info" and "--measure work counts with callgrind (valgrind)" in found.found
    found = host_checks.pmu(tmp_path, tmp_path, which=lambda name: None)
    assert found.status == "warn" and found.fix == "apt-get install valgrind (callgrind counts anywhere)"
    events.mkdir(parents=True)
    (events / "instructions").write_text("event=0xc0\n")
    found = host_checks.pmu(tmp_path, tmp_path, which=lambda name: None)
    assert found.status == "ok" and "perf stat at native speed" in found.found


def test_a_counted_burst_is_sized_to_take_about_a_second_within_the_phases_own_burst():
    """The probe pair's 50 transactions took 3.5 s under callgrind (random IN-list points):
    the rest run 20, the floor; 0.07 s (point selects): ~700, cut to the phase's burst."""
    assert work.counted_burst_size(10, 12.0, 300) == work.MIN_TRANSACTIONS  # a compressed write: ~1 s each
    assert work.counted_burst_size(50, 3.5, 300) == 14
    assert work.counted_burst_size(50, 0.5, 3000) == 100
    assert work.counted_burst_size(50, 0.07, 300) == 300
    assert work.counted_burst_size(50, 0.0, 10) == 10  # never more than the phase's own burst


def test_a_callgrind_dumps_instructions_per_function_are_each_functions_own_code():
    """Self cost: a function's cost lines less the inclusive cost after each `calls=`
    line; compressed names resolve wherever they were defined (fn= or cfn=)."""
    recorded = work.function_costs((DATA / "callgrind" / "mariadbd-10.11.19-dump.txt").read_text())
    assert recorded.own["_my_thread_var"] == 2481 + 831  # not the 14,059 its calls to pthread_getspecific cost
    assert recorded.inclusive["_my_thread_var"] == 2481 + 831 + 14_059  # with them
    assert recorded.own["strxmov"] == recorded.inclusive["strxmov"] == 140
    assert "pthread_getspecific@@GLIBC_2.34" not in recorded.own  # only called here: no block of its own
    dump = """\
positions: line
events: Ir
fn=(1) do_command(THD*, bool)
12 100
cfn=(2) parse_sql
calls=1 40
14 5000
+2 7
fn=(2)
40 4000
*  900
fn=plain_name
-3 11
fn=(1)
20 3
"""
    counted = work.function_costs(dump)
    assert counted.own == {"do_command(THD*, bool)": 110, "parse_sql": 4900, "plain_name": 11}
    assert counted.inclusive == {"do_command(THD*, bool)": 5110, "parse_sql": 4900, "plain_name": 11}
    recursive = "fn=(1) walk\n1 10\ncfn=(1)\ncalls=3 1\n1 30\ncfn=(2) leaf\ncalls=1 1\n1 5\n"
    assert work.function_costs(recursive).inclusive["walk"] == 15  # its calls of itself are its own cost already
    assert counted.calls == {("do_command(THD*, bool)", "parse_sql"): 5000}  # the call graph's edge
    assert work.function_costs(recursive).calls == {("walk", "leaf"): 5}  # a call of itself is no edge


def test_more_valgrind_options_are_recorded_and_checked(monkeypatch):
    monkeypatch.setenv("PERFCI_VALGRIND_OPTIONS", "--fair-sched=yes --error-limit=no")
    assert work.valgrind_options() == ["--fair-sched=yes", "--error-limit=no"]
    described = work.WorkSetup("callgrind", collected="do_command", options=work.valgrind_options()).describe()
    assert described.endswith("inside do_command (valgrind --fair-sched=yes --error-limit=no)")
    monkeypatch.setenv("PERFCI_VALGRIND_OPTIONS", "--fair-sched=yes; rm -rf /")
    with pytest.raises(BadInput, match="PERFCI_VALGRIND_OPTIONS: 'rm': valgrind options are --NAME"):
        work.valgrind_options()
