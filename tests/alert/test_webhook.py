"""The night's chat webhook: one POST of the night's message to a real HTTP server on
127.0.0.1 (what Slack's or Discord's incoming webhook would receive), a retry after a
server error, a failure that changes nothing else, and bad URLs refused before the night."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from perfci.alert.webhook import check_url, payload, post
from perfci.model.outputs import CaseNight
from perfci.report.night_summary import chat_message
from perfci.store.history_files import append
from perfci.util.errors import BadInput

from conftest import run_perfci
from factories import make_result, write_results
from fake_github import FakeGitHub


class Hook:
    """An incoming webhook on a free loopback port: answers `statuses` in turn (then 200)."""

    def __init__(self, statuses: list[int] | None = None):
        self.posts: list[dict] = []
        self.statuses = list(statuses or [])
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hook.posts.append(body)
                self.send_response(hook.statuses.pop(0) if hook.statuses else 200)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/T000/B000/secret"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook():
    made: list[Hook] = []

    def make(statuses=None) -> Hook:
        made.append(Hook(statuses))
        return made[-1]
    yield make
    for h in made:
        h.close()


def test_one_post_a_retry_after_a_server_error_and_a_refusal_said_not_raised(hook):
    ok = hook([502])
    assert post(ok.url, "hello", retry_delay_s=0) == "webhook: posted the night's message (HTTP 200)"
    assert ok.posts == [{"text": "hello"}, {"text": "hello"}]
    refused = hook([403])
    said = post(refused.url, "hello", retry_delay_s=0)
    assert said.startswith("webhook: not posted (HTTP 403)") and "secret" not in said and len(refused.posts) == 1


def test_discord_gets_content_and_urls_are_checked():
    assert json.loads(payload("https://discord.com/api/webhooks/1/x", "m")) == {"content": "m"}
    assert json.loads(payload("https://hooks.slack.com/services/T/B/x", "m" * 50_000))["text"].endswith("…")
    for bad in ("http://hooks.example.com/x", "ftp://127.0.0.1/x", "not a url"):
        with pytest.raises(BadInput, match="https://") as err:
            check_url(bad)
        assert bad not in str(err.value)


def test_the_message_leads_with_whether_anyone_needs_to_look():
    cases = [CaseNight(case="c/m/s/p/a", status="opened", issue=7, keys=["a.tps", "a.qps"]),
             CaseNight(case="c/m/s/p/b", status="quiet"), CaseNight(case="c/m/s/p/d", status="quiet"),
             CaseNight(case="c/m/s/p/e", status="pending", keys=["e.tps"])]
    text = chat_message(cases, "https://gh/o/r/actions/runs/9", "https://gh/o/r")
    assert text.splitlines() == [
        "perfci nightly: 1 regression told tonight (1 pending, 2 quiet) · https://gh/o/r/actions/runs/9",
        "• c/m/s/p/a: a.tps, a.qps — opened https://gh/o/r/issues/7"]
    assert chat_message([CaseNight(case="x", status="quiet")]).startswith("perfci nightly: nothing opened")


@pytest.mark.slow
def test_a_night_posts_once_to_its_webhook(tmp_path, hook):
    history = tmp_path / "history"
    append([make_result(tps=1000 + i) for i in range(4)], history)
    [(slow, _)] = write_results(tmp_path / "slow", [make_result(tps=500)])
    h = hook()
    with FakeGitHub(tmp_path) as fake:
        proc = run_perfci("nightly", str(slow), "--history", str(history), "--min-nights", "1", "--webhook", h.url,
                          env=fake.env(tmp_path / "gh"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [message] = h.posts
    assert message["text"].startswith("perfci nightly: 1 regression told tonight") and "opened #1" in message["text"]
    assert "webhook: posted" in proc.stdout and h.url not in proc.stdout + proc.stderr


@pytest.mark.slow  # several CLI starts
def test_a_dry_run_writes_the_message_and_a_bad_url_stops_before_the_night(tmp_path):
    history = tmp_path / "history"
    append([make_result(tps=1000 + i) for i in range(4)], history)
    [(same, _)] = write_results(tmp_path / "same", [make_result(tps=1001)])
    out = tmp_path / "issues"
    proc = run_perfci("nightly", str(same), "--history", str(history), "--dry-run", "--out", str(out),
                      env={"PERFCI_WEBHOOK_URL": "https://hooks.example.com/x"})
    assert proc.returncode == 0, proc.stderr
    assert (out / "webhook.txt").read_text().startswith("perfci nightly: nothing opened or commented tonight")
    [case_file] = history.glob("*/*/*/*/*.jsonl")
    before = case_file.read_text()
    [(later, _)] = write_results(tmp_path / "later", [make_result(tps=1002)])
    bad = run_perfci("nightly", str(later), "--history", str(history), "--dry-run", "--out", str(out),
                     "--webhook", "http://example.com/hook")
    assert bad.returncode == 2 and "example.com" not in bad.stderr
    assert case_file.read_text() == before  # refused before the night: nothing appended
