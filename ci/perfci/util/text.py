"""Text that crosses a trust boundary: refused when it carries control characters
(a newline in a config value would add my.cnf lines past the reserved-option
check), escaped when it goes into GitHub issue titles and bodies (an axis value
`@someone` must not mention anyone, a backtick must not end a code span, HTML must
not render)."""

from __future__ import annotations

import html
import re

# Control characters other than tab and newline: never meaningful in a scenario.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# In one-line values (server option names and values) tab and newline are refused too.
_LINE_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~])")


def control_char(text: str, one_line: bool = False) -> str | None:
    """The first control character in `text` as an escape (e.g. '\\n'), or None."""
    m = (_LINE_CONTROL if one_line else _CONTROL).search(text)
    return None if m is None else repr(m.group(0))[1:-1]


def first_control_char(data: object, where: str = "") -> tuple[str, str] | None:
    """(field path, character) of the first control character in any string or key
    of a parsed YAML/JSON document; tab and newline are allowed (SQL, descriptions)."""
    if isinstance(data, str):
        found = control_char(data)
        return (where or "(top level)", found) if found else None
    if isinstance(data, dict):
        for key, value in data.items():
            path = f"{where}.{key}" if where else str(key)
            hit = (first_control_char(key, where or "(top level)") if isinstance(key, str) else None) \
                or first_control_char(value, path)
            if hit:
                return hit
    if isinstance(data, list):
        for i, value in enumerate(data):
            hit = first_control_char(value, f"{where}[{i}]")
            if hit:
                return hit
    return None


def _no_mentions(text: str) -> str:
    # a zero-width space after '@' keeps the text readable and mentions nobody
    return text.replace("@", "@\u200b")


def issue_title(text: str) -> str:
    """An issue title: one line, no mentions (titles are plain text, not Markdown)."""
    return _no_mentions(_LINE_CONTROL.sub(" ", text))


def markdown(text: str) -> str:
    """Untrusted text as literal Markdown: no mentions, no HTML, no formatting."""
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", _LINE_CONTROL.sub(" ", text))
    return _no_mentions(html.escape(escaped, quote=False))


# the one piece of HTML a report may keep: a folded section, alone on its lines, with a
# plain summary (report/interleaved.py folds its unchanged rows and its method so)
_FOLD_OPEN = re.compile(r"^&lt;details&gt;&lt;summary&gt;([^<>]*?)&lt;/summary&gt;$", re.MULTILINE)
_FOLD_CLOSE = re.compile(r"^&lt;/details&gt;$", re.MULTILINE)


# an inline code span GitHub renders as code whatever it holds: not after a backslash or a
# backtick, one line, no backtick and no `|` inside (a table splits cells at a pipe before
# it sees code spans, which would put the rest of the span outside one)
_CODE_SPAN = re.compile(r"(?<![\\`])(`+)([^`|\n]+?)\1(?!`)")


def inert_markdown(text: str) -> str:
    """Markdown perfci rendered from files it did not write itself (a stored A/B report):
    its tables, emphasis and folded sections stay, but no other HTML, no comment (which
    could close a marker), no mention and no image renders. Code spans are kept as they
    are (GitHub renders no HTML, mention or image inside one, and would show an escaped
    `&lt;` there literally: a C++ template argument in a function name)."""
    parts, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        parts += [_inert_text(text[last:m.start()]), m.group(0)]
        last = m.end()
    escaped = "".join([*parts, _inert_text(text[last:])])
    return _FOLD_CLOSE.sub("</details>", _FOLD_OPEN.sub(r"<details><summary>\1</summary>", escaped))


def _inert_text(text: str) -> str:
    return _no_mentions(html.escape(text, quote=False)).replace("![", "!\\[")


def web_link(url: str) -> str | None:
    """`url` if it may be a link target (http or https), else None: a `javascript:` or
    `data:` URL from a history file must never become a link."""
    return url if re.match(r"^https?://[^\s\"'<>]+$", url or "") else None


def code_fence(text: str, lang: str = "") -> str:
    """A fenced code block that `text` cannot close early: the fence is longer than
    any run of backticks inside it (CommonMark)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def code_span(text: str) -> str:
    """An inline code span `text` cannot break out of."""
    text = _LINE_CONTROL.sub(" ", text)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"
