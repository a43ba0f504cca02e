"""The one loader of perfci's JSON files (asv's `util.load_json`, pyperf's upgrades).

Each file kind declares a `FileFormat` beside its model: its current schema, the steps
that upgrade an older schema to the next, and the model that validates the result. A
file of any known version loads; a file written by a newer perfci is refused (never
half-read); a file that is not JSON, not an object, of another kind, or with a field
that does not fit is one line naming the file and the field (BadInput, exit 2).
`perfci schema` prints the JSON Schema of every registered format.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, JsonValue, ValidationError

from perfci.model.scenario import validation_message
from perfci.util.errors import BadInput, NewerFormat

JsonObject = dict[str, JsonValue]
Upgrade = Callable[[JsonObject], JsonObject]
M = TypeVar("M", bound=BaseModel)
_VERSION = re.compile(r"^(perfci\.[a-z-]+)/(\d+)$")


@dataclass(frozen=True)
class FileFormat(Generic[M]):
    kind: str                                   # what messages and `perfci schema` call it: "result"
    model: type[M]
    current: str                                # the schema this perfci writes: "perfci.result/2"
    upgrades: Mapping[str, Upgrade] = field(default_factory=dict)  # older schema -> step to the next one
    unversioned: str | None = None              # the schema of a document written before it carried one
    hint: str = ""                              # what to do about a corrupt file

    @property
    def known(self) -> tuple[str, ...]:
        return (*self.upgrades, self.current)

    def upgrade(self, data: JsonObject, source: str) -> JsonObject:
        """Bring a document of any known version to the current one, step by step."""
        seen: set[str] = set()
        if "schema" not in data and self.unversioned:
            data = {**data, "schema": self.unversioned}
        while (version := str(data.get("schema"))) != self.current:
            if self.is_newer(version):
                raise NewerFormat(f"{source}: written by a newer perfci ({version}); this perfci reads "
                               f"{', '.join(self.known)}: upgrade perfci to read it")
            if version not in self.upgrades or version in seen:
                raise BadInput(f"{source}: not a perfci {self.kind} (schema {data.get('schema')!r}; "
                               f"known: {', '.join(self.known)})")
            seen.add(version)
            data = self.upgrades[version](data)
        return data

    def is_newer(self, version: str) -> bool:
        mine, theirs = _VERSION.match(self.current), _VERSION.match(version)
        return bool(mine and theirs and mine.group(1) == theirs.group(1) and int(theirs.group(2)) > int(mine.group(2)))

    def parse(self, data: object, source: str) -> M:
        if not isinstance(data, dict):
            raise BadInput(f"{source}: not a perfci {self.kind} (a JSON object is expected)")
        current = self.upgrade(data, source)
        try:
            return self.model.model_validate(current)
        except ValidationError as exc:
            raise BadInput(validation_message(f"{source} (corrupt {self.kind})", exc, self.model)) from None

    def parse_text(self, text: str, source: str) -> M:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{source}: corrupt {self.kind} (not JSON: {exc.msg} at line {exc.lineno})"
                           + (f"; {self.hint}" if self.hint else "")) from None
        return self.parse(data, source)

    def load(self, path: Path) -> M:
        """Load a file of this kind; `*.gz` is read gzipped (how kept raw data is stored)."""
        path = Path(path)
        try:
            text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
        except (gzip.BadGzipFile, EOFError):
            raise BadInput(f"{path}: not a gzipped perfci {self.kind} (named .gz)") from None
        except FileNotFoundError:
            raise BadInput(f"{path}: no such {self.kind} file") from None
        except IsADirectoryError:
            raise BadInput(f"{path}: is a directory, not a {self.kind} file") from None
        except UnicodeDecodeError:
            raise BadInput(f"{path}: not a perfci {self.kind} (not UTF-8 text)") from None
        except OSError as exc:
            raise BadInput(f"{path}: cannot read the {self.kind} file: {exc.strerror}") from None
        return self.parse_text(text, str(path))
