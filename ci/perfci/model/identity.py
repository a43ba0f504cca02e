"""A case's identity: the one definition baselines, history, issues and compare use.

A case is (runner class, server, scenario, profile, case id, measure). The server part is
its release *line* (`mysql-8.0`) by default, so a patch upgrade keeps the same
baseline history and the same open issues (the exact version is recorded in every
sample and issue body); `follow="version"` keys by the exact version instead. A counted run (`perfci run
--measure work`) is a case of its own: its series of instructions per transaction
never mixes with the timed one's (its profile part reads `<profile>.work`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from perfci.model.result import Result

Follow = Literal["line", "version"]
FOLLOW_CHOICES: tuple[Follow, ...] = ("line", "version")
DEFAULT_FOLLOW: Follow = "line"


def slug(text: str) -> str:
    """A safe single path component: no separators, no `..`."""
    cleaned = re.sub(r"[^A-Za-z0-9_.=-]+", "__", text)
    return "_" + cleaned if cleaned.startswith(".") or not cleaned else cleaned


def server_line(flavor: str, version: str) -> str:
    """`mysql`, `8.0.42` -> `mysql-8.0`: the release line a server belongs to."""
    major_minor = ".".join(str(version).split(".")[:2])
    return f"{flavor}-{major_minor}"


@dataclass(frozen=True)
class CaseIdentity:
    runner_class: str
    server: str          # the line (mysql-8.0) or the exact version (mysql-8.0.42), see `follow`
    scenario: str
    profile: str
    case: str
    measure: str = "time"  # time | work (counted): two series of one case, kept apart

    @classmethod
    def of(cls, result: Result, follow: Follow = DEFAULT_FOLLOW) -> CaseIdentity:
        srv = result.server
        server = (srv.line or server_line(srv.flavor, srv.version)) if follow == "line" \
            else f"{srv.flavor}-{srv.version}"
        return cls(result.runner_class, server, result.scenario.name, result.scenario.profile, result.case,
                   result.measure)

    @property
    def series_profile(self) -> str:
        """The profile as paths and fingerprints name the series: `nightly`, or `nightly.work`
        for the counted one (the history's layout keeps its depth)."""
        return self.profile if self.measure == "time" else f"{self.profile}.{self.measure}"

    def parts(self) -> list[str]:
        return [slug(self.runner_class), slug(self.server), slug(self.scenario), slug(self.series_profile)]

    def path(self, root: Path, suffix: str) -> Path:
        """root/<runner class>/<server>/<scenario>/<profile>/<case><suffix>"""
        return Path(root).joinpath(*self.parts()) / f"{slug(self.case)}{suffix}"

    @property
    def slug_path(self) -> str:
        """runner class/server/scenario/profile/case as slugs: how history annotations and issues name a case."""
        return "/".join([*self.parts(), slug(self.case)])

    def key(self, metric: str = "") -> str:
        """The text an issue fingerprint hashes."""
        return "|".join([self.runner_class, self.server, self.scenario, self.series_profile, self.case, metric])

    @property
    def label(self) -> str:
        counted = " · counted work" if self.measure == "work" else ""
        return f"{self.scenario} · {self.profile} · {self.case}{counted} · {self.server} · runner {self.runner_class}"
