"""The optional chat webhook of a night (`perfci nightly --webhook URL`): one POST of
the night's message (report/night_summary.chat_message), as Slack, Mattermost, Rocket.Chat
and Google Chat incoming webhooks take it (`{"text": …}`), Discord's as `{"content": …}`.
It is a courtesy beside the issues: a failure is said and changes nothing else (the
history and the issues are the record); the URL is a secret and is never printed."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request

from perfci.util.errors import BadInput

TIMEOUT_S = 30
RETRY_DELAY_S = 5.0
# Discord caps a message's content at 2000 characters, Slack a text at 40,000
CAPS = {"content": 2000, "text": 40_000}


def check_url(url: str) -> str:
    """A webhook URL perfci may post to: https, or http to this host only (tests, a local relay)."""
    parts = urllib.parse.urlsplit(url)
    local = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if not parts.hostname or not (parts.scheme == "https" or (parts.scheme == "http" and local)):
        raise BadInput("--webhook: expected an https:// URL (http:// only to 127.0.0.1), e.g. a Slack incoming "
                       "webhook; the value is not shown here")
    return url


def payload(url: str, message: str) -> bytes:
    host = urllib.parse.urlsplit(url).hostname or ""
    field = "content" if host in ("discord.com", "discordapp.com") or host.endswith(".discord.com") else "text"
    cap = CAPS[field]
    text = message if len(message) <= cap else message[:cap - 1] + "…"
    return json.dumps({field: text}).encode()


def post(url: str, message: str, retry_delay_s: float = RETRY_DELAY_S) -> str:
    """POST the message; one more try after a server error or no answer. Returns what
    happened, in words, for the night's actions (never the URL)."""
    body = payload(url, message)
    last = ""
    for attempt in range(2):
        request = urllib.request.Request(url, data=body, method="POST",
                                         headers={"Content-Type": "application/json", "User-Agent": "perfci"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:  # noqa: S310 - checked by check_url
                return f"webhook: posted the night's message (HTTP {answer.status})"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}"
            if exc.code < 500 and exc.code != 429:
                break
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            last = str(exc.reason) if isinstance(exc, urllib.error.URLError) else type(exc).__name__
        if attempt == 0:
            time.sleep(retry_delay_s)
    return f"webhook: not posted ({last}); the issues and the history are unaffected"
