"""The one base of perfci's pydantic models: strict (an unknown field is an error, not
silently kept) and immutable."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
