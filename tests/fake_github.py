"""A local HTTPS server speaking the GitHub REST endpoints our `gh api` calls use
(list/create/patch issues, list/create comments), with state, so the real gh can
be tested. Its CA is made by trustme and trusted through SSL_CERT_FILE."""

from __future__ import annotations

import json
import re
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import trustme


class FakeGitHub:
    def __init__(self, directory: Path, token: str = "test-token"):
        self.token = token
        self.issues: dict[int, dict] = {}
        self.comments: dict[int, list[dict]] = {}
        self.requests: list[tuple[str, str]] = []
        self.login = "perfci-bot"  # the account the token belongs to
        self._comment_ids = 1000
        self.pulls: dict[int, dict] = {}  # GET /repos/o/r/pulls/N (public data: no token needed)
        # GET /repos/o/r/collaborators/LOGIN/permission (else 404); the maintainer labels by default
        self.permissions: dict[str, str] = {"maintainer": "write"}
        self.events: dict[int, list[dict]] = {}  # GET /repos/o/r/issues/N/events: who added which label
        self.fail_with: int | None = None  # answer every request with this status
        self.fail_next: list[int] = []  # answer the next requests with these statuses, then as usual
        self.fail_after_next: list[int] = []  # carry out the next writes, then answer with these statuses
        ca = trustme.CA()
        self.cafile = Path(directory) / "fake-github-ca.pem"
        ca.cert_pem.write_to_path(str(self.cafile))
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload) -> None:
                if getattr(self, "failed_after", None):  # done, but the answer is lost (a 502 from a proxy)
                    status, payload = self.failed_after, {"message": "Bad Gateway"}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _read_body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":  # gh api --input -
                    data = b""
                    while True:
                        size = int(self.rfile.readline().strip().split(b";")[0], 16)
                        if size == 0:
                            self.rfile.readline()
                            return data
                        data += self.rfile.read(size)
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _handle(self):
                self.failed_after = fake.fail_after_next.pop(0) if fake.fail_after_next and \
                    self.command in ("POST", "PATCH") else None
                body = json.loads(self._read_body() or b"null")
                url = urlparse(self.path)
                fake.requests.append((self.command, url.path))
                pull = re.fullmatch(r"/api/v3/repos/([^/]+)/([^/]+)/pulls/(\d+)", url.path)
                if pull and self.command == "GET":
                    found = fake.pulls.get(int(pull.group(3)))
                    return self._send(200, found) if found else self._send(404, {"message": "Not Found"})
                if self.headers.get("Authorization") != f"token {fake.token}":
                    return self._send(401, {"message": "Bad credentials"})
                if fake.fail_with:
                    return self._send(fake.fail_with, {"message": "Server Error"})
                if fake.fail_next:
                    status = fake.fail_next.pop(0)
                    return self._send(status, {"message": "API rate limit exceeded" if status in (403, 429)
                                               else "Server Error"})
                # GitHub's validation: what it refuses with 422 Unprocessable Entity
                if isinstance(body, dict) and (len(body.get("body") or "") > 65536 or len(body.get("title") or "") > 256
                                               or any(len(n) > 50 for n in body.get("labels") or [])):
                    return self._send(422, {"message": "Validation Failed"})
                who = re.fullmatch(r"/api/v3/repos/([^/]+)/([^/]+)/collaborators/([^/]+)/permission", url.path)
                if who and self.command == "GET":
                    level = fake.permissions.get(who.group(3))
                    return (self._send(200, {"permission": level, "role_name": level}) if level
                            else self._send(404, {"message": f"{who.group(3)} is not a user"}))
                events = re.fullmatch(r"/api/v3/repos/([^/]+)/([^/]+)/issues/(\d+)/events", url.path)
                if events and self.command == "GET":
                    q = parse_qs(url.query)
                    per_page, page = int(q.get("per_page", ["30"])[0]), int(q.get("page", ["1"])[0])
                    return self._send(200, fake.events.get(int(events.group(3)), [])[(page - 1) * per_page:
                                                                                     page * per_page])
                edit = re.fullmatch(r"/api/v3/repos/([^/]+)/([^/]+)/issues/comments/(\d+)", url.path)
                if edit and self.command == "PATCH":
                    found = [c for cs in fake.comments.values() for c in cs if c.get("id") == int(edit.group(3))]
                    if not found:
                        return self._send(404, {"message": "Not Found"})
                    found[0]["body"] = body["body"]
                    return self._send(200, found[0])
                m = re.fullmatch(r"/api/v3/repos/([^/]+)/([^/]+)/issues(?:/(\d+))?(/comments)?", url.path)
                if not m:
                    return self._send(404, {"message": "Not Found"})
                number = int(m.group(3)) if m.group(3) else None
                if number is None and self.command == "GET":
                    q = parse_qs(url.query)
                    label = q.get("labels", [""])[0]
                    state = q.get("state", ["open"])[0]
                    page = int(q.get("page", ["1"])[0])
                    hits = [i for i in fake.issues.values() if state in (i["state"], "all") and
                            (not label or label in [lab["name"] for lab in i["labels"]])]
                    return self._send(200, hits[(page - 1) * 100: page * 100])
                if number is None and self.command == "POST":
                    n = max(fake.issues, default=0) + 1
                    fake.issues[n] = {"number": n, "title": body["title"], "body": body["body"], "state": "open",
                                      "user": {"login": fake.login},
                                      "labels": [{"name": name} for name in body.get("labels", [])]}
                    fake.comments[n] = []
                    return self._send(201, fake.issues[n])
                if number not in fake.issues:
                    return self._send(404, {"message": "Not Found"})
                if m.group(4) and self.command == "GET":
                    q = parse_qs(url.query)
                    per_page, page = int(q.get("per_page", ["30"])[0]), int(q.get("page", ["1"])[0])
                    return self._send(200, fake.comments[number][(page - 1) * per_page: page * per_page])
                if m.group(4) and self.command == "POST":
                    fake.comments[number].append({"body": body["body"], "user": {"login": fake.login},
                                                  "author_association": "NONE", "id": fake.next_comment_id()})
                    return self._send(201, fake.comments[number][-1])
                if self.command == "PATCH":
                    fake.issues[number].update({k: v for k, v in body.items() if k in ("state", "body", "title")})
                    return self._send(200, fake.issues[number])
                return self._send(405, {"message": "Method Not Allowed"})

            do_GET = do_POST = do_PATCH = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("127.0.0.1").configure_cert(context)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)  # a quick shutdown

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def comment_as(self, number: int, login: str, body: str, association: str = "NONE") -> None:
        """A comment by someone else (what the API would show for a person's comment);
        `association`: OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE ..."""
        self.comments[number].append({"body": body, "user": {"login": login}, "author_association": association,
                                      "id": self.next_comment_id()})

    def next_comment_id(self) -> int:
        self._comment_ids += 1
        return self._comment_ids

    def add_pull(self, number: int, head_sha: str) -> None:
        """A pull request: its number is an issue number too (comments go through the
        issues API); the issues listing shows it with a `pull_request` key."""
        labels = self.issues[number]["labels"] if number in self.issues else []  # one list: a label shows in both
        self.pulls[number] = {"number": number, "head": {"sha": head_sha}, "labels": labels}
        self.issues[number] = {"number": number, "title": f"PR {number}", "body": "", "state": "open",
                               "user": {"login": "contributor"}, "labels": labels, "pull_request": {}}
        self.comments.setdefault(number, [])

    def add_label(self, number: int, name: str, by: str = "maintainer") -> None:
        """What a person adding a label in the web UI does (and the event it leaves)."""
        self.issues[number]["labels"].append({"name": name})
        self.events.setdefault(number, []).append({"event": "labeled", "actor": {"login": by}, "label": {"name": name}})

    @property
    def api_url(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}/api/v3"

    def env(self, cache_dir: Path, token: str | None = "test-token") -> dict:
        env = {"GH_HOST": f"127.0.0.1:{self.server.server_address[1]}", "SSL_CERT_FILE": str(self.cafile),
               "XDG_CACHE_HOME": str(cache_dir), "XDG_CONFIG_HOME": str(cache_dir), "GH_PROMPT_DISABLED": "1",
               "GITHUB_REPOSITORY": "perf/ci", "GH_TOKEN": "", "GITHUB_TOKEN": "", "GH_ENTERPRISE_TOKEN": ""}
        if token:
            env["GH_ENTERPRISE_TOKEN"] = token
        return env
