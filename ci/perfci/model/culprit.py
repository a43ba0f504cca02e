"""A search for the commit that made a case slower (the value): the steps of a bisect
and what they found. `perfci bisect` writes it in its JSON; the nightly's reference
A/B of a build: line carries it in its confirmation, and the issue names the commit."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from perfci.model.base import StrictModel
from perfci.model.formats import FileFormat, JsonObject


class BisectStep(StrictModel):
    reference: str
    candidate: str
    verdict: Literal["regression", "unchanged", "improvement", "inconclusive"]
    ratio: float = Field(description="B/A of the judged metric")
    low: float
    high: float
    mde: float | None = Field(None, description="what this step's A/B could see (90 % power), when it said")


class LineCommit(StrictModel):
    sha: str
    subject: str = ""


class CulpritSearch(StrictModel):
    """The nightly's own bisect over the commits between the reference and tonight."""

    metric: str = Field(description="the judged metric that decides a step (e.g. tps)")
    phases: list[str] = Field(description="the phases whose regression the reference A/B confirmed")
    good: str = Field(description="the line's good end: build:FLAVOR@SHA (the reference)")
    bad: str = Field(description="its bad end: tonight's commit")
    commits: list[LineCommit] = Field(description="the line walked, oldest first (the good end first)")
    summary: str = Field(description="the sentence a person reads")
    first_bad: str | None = Field(None, description="the first slower commit, when one step holds the change")
    last_good: str | None = None
    remaining: list[str] | None = Field(None, description="out of time: the stretch [good, bad] still to search "
                                                          "(the next night resumes there)")
    steps: list[BisectStep] = []
    budget_minutes: float = Field(description="the search's time budget (a step started in it finishes)")
    log: str = Field("", description="the search's step log (JSON lines)")

    def subject_of(self, spec: str | None) -> str:
        sha = (spec or "").rpartition("@")[2]
        return next((c.subject for c in self.commits if c.sha == sha), "")


class PendingSearch(StrictModel):
    """A culprit search out of time, kept beside the case's history (the results branch)
    so that the next night's search resumes in the stretch it left."""

    schema_: Literal["perfci.culprit-search/1"] = Field("perfci.culprit-search/1", alias="schema")
    case: str
    search: CulpritSearch

    def dump(self) -> JsonObject:
        return self.model_dump(mode="json", by_alias=True)


PENDING_SEARCH_FILE = FileFormat("culprit search", PendingSearch, "perfci.culprit-search/1")
