"""The size budget of the context block: per item and in total, met by eliding.

This module owns how items are cut down to fit. Each item's rendered line must fit
`Budget.per_item_chars` (64,000 by default) and the whole block `Budget.total_chars`.
Over budget, the heaviest part goes first: the heaviest field of an object value, then
the whole value, then all but the start of a long label. An elided part is replaced by
a marker, `{"elided": {"chars": <chars>, "digest": <hex>, "fetchWith": <tool>}}`: how
many characters it takes in a line, the start of its SHA-256 (so that other values of
the same size make another line, which dedup sends again) and the tool that fetches it;
each line stays one JSON object. A page cannot write that shape (what it
sends under its own keys is scalars, lists of scalars and `{value, unit}` quantities), so
a marker in a line is always one this module wrote. If eliding is not enough for the
total, items are dropped from the end (references come first, so they are kept longest)
and one `{"type": "elided", ...}` item says how many and which tool lists them. The
final block is rendered and measured again; it is within budget or `fit_block` raises.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

from pagecontext.block import render_block, render_line, safe_json
from pagecontext.errors import LocalProtocolError
from pagecontext.integration import VARIATION_SELECTORS
from pagecontext.items import ID_PATTERN, ContextItem, Instruction, JsonValue

__all__ = [
    "DEFAULT_BUDGET",
    "ELIDED_TYPE",
    "Budget",
    "fit_block",
    "fit_items",
    "is_marker",
]

ELIDED_TYPE: Final = "elided"
_LABEL_KEEP: Final = 200
_LABEL_CUT: Final = "...[elided]"
_ID_RE: Final = re.compile(ID_PATTERN)


@dataclass(frozen=True)
class Budget:
    """Character budgets and the tools that fetch what is elided, by item type.

    Tool names must match ID_PATTERN. Raises LocalProtocolError otherwise, or for a
    budget below 1.
    """

    per_item_chars: int = 64_000
    total_chars: int = 128_000
    fetch_tools: Mapping[str, str] = field(default_factory=dict)
    default_tool: str = "get_context_item"
    list_tool: str = "list_context_items"

    def __post_init__(self) -> None:
        object.__setattr__(self, "fetch_tools", MappingProxyType(dict(self.fetch_tools)))
        if self.per_item_chars < 1 or self.total_chars < 1:
            raise LocalProtocolError("a budget is at least one character")
        tools = [*self.fetch_tools.values(), self.default_tool, self.list_tool]
        if not all(isinstance(tool, str) and _ID_RE.fullmatch(tool) for tool in tools):
            raise LocalProtocolError(f"tool names must match {ID_PATTERN}")

    def tool_for(self, item: ContextItem) -> str:
        """Return the tool that fetches `item`'s elided parts."""
        return self.fetch_tools.get(item.type, self.default_tool)


DEFAULT_BUDGET: Final = Budget()


def is_marker(value: JsonValue) -> bool:
    """Return True if `value` has the shape of an elision marker."""
    if not isinstance(value, dict) or set(value) != {"elided"}:
        return False
    inner = value["elided"]
    return isinstance(inner, dict) and set(inner) == {"chars", "digest", "fetchWith"}


def fit_items(items: Sequence[ContextItem], budget: Budget = DEFAULT_BUDGET) -> list[ContextItem]:
    """Return `items` with each one's line cut to `budget.per_item_chars`.

    An item that cannot be cut that far (a huge key or type) is left out.
    """
    fitted: list[ContextItem] = []
    for item in items:
        current: ContextItem | None = item
        while current is not None and len(render_line(current)) > budget.per_item_chars:
            current = _elide_heaviest(current, budget)
        if current is not None:
            fitted.append(current)
    return fitted


def fit_block(
    instructions: Sequence[Instruction],
    items: Sequence[ContextItem],
    budget: Budget = DEFAULT_BUDGET,
) -> str:
    """Return the rendered block of `instructions` and `items`, within `budget`.

    Raises LocalProtocolError if even the instructions and the block's frame do not fit.
    """
    fitted = fit_items(items, budget)
    dropped = len(items) - len(fitted)
    lengths = [len(render_line(item)) for item in fitted]
    while _total(instructions, lengths, dropped, budget) > budget.total_chars:
        heaviest = max(range(len(fitted)), key=lengths.__getitem__, default=None)
        smaller = _elide_heaviest(fitted[heaviest], budget) if heaviest is not None else None
        if heaviest is not None and smaller is not None:
            fitted[heaviest] = smaller
            lengths[heaviest] = len(render_line(smaller))
            continue
        if not fitted:
            break
        # Nothing left to elide in the heaviest item: drop the last (least important).
        fitted.pop()
        lengths.pop()
        dropped += 1
    block = render_block(instructions, _with_summary(fitted, dropped, budget))
    # Measured again on the real text: the frame, escapes and joins all count.
    if len(block) > budget.total_chars:
        raise LocalProtocolError(
            f"the block needs {len(block)} characters, over the budget of {budget.total_chars}"
        )
    return block


def _total(
    instructions: Sequence[Instruction], lengths: list[int], dropped: int, budget: Budget
) -> int:
    """Return the block's length from its item line lengths, without rendering it all."""
    lines = [*lengths]
    if dropped:
        lines.append(len(render_line(_summary(dropped, budget))))
    if not lines:
        return len(render_block(instructions, []))
    # The frame: everything but the item lines and the newline after each of them.
    frame = len(render_block(instructions, [_PLACEHOLDER])) - len(render_line(_PLACEHOLDER)) - 1
    return frame + sum(length + 1 for length in lines)


_PLACEHOLDER: Final = ContextItem(type="x", value=0)


def _summary(dropped: int, budget: Budget) -> ContextItem:
    return ContextItem(
        type=ELIDED_TYPE, value={"elidedItems": dropped, "fetchWith": budget.list_tool}
    )


def _with_summary(fitted: list[ContextItem], dropped: int, budget: Budget) -> list[ContextItem]:
    return [*fitted, _summary(dropped, budget)] if dropped else list(fitted)


def _json(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _size(value: JsonValue) -> int:
    """The characters `value` takes in a line, escaped as the line escapes it."""
    return len(safe_json(_json(value)))


_DIGEST_HEX: Final = 12


def _marker(value: JsonValue, tool: str) -> dict[str, JsonValue]:
    text = _json(value)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_HEX]
    return {"elided": {"chars": len(safe_json(text)), "digest": digest, "fetchWith": tool}}


def _elide_heaviest(item: ContextItem, budget: Budget) -> ContextItem | None:
    """Return `item` with its heaviest part elided, or None if nothing is left to elide."""
    tool = budget.tool_for(item)
    value = item.value
    if isinstance(value, dict) and not is_marker(value):
        live = {key: _size(child) for key, child in value.items() if not is_marker(child)}
        if live:
            heaviest = max(live, key=live.__getitem__)
            marker = _marker(value[heaviest], tool)
            # Eliding a field smaller than its marker only grows the line.
            if live[heaviest] > _size(marker):
                return replace(item, value={**value, heaviest: marker})
    if value is not None and not is_marker(value):
        marker = _marker(value, tool)
        if _size(value) > _size(marker):
            return replace(item, value=marker)
    # Only a label the cut makes shorter: a cut label is not cut again.
    if item.label is not None and len(item.label) > _LABEL_KEEP + len(_LABEL_CUT):
        return replace(
            item, label=item.label[: _whole_characters(item.label, _LABEL_KEEP)] + _LABEL_CUT
        )
    return None


# Joining and regional-indicator code points: a character cut from what follows changes.
_ZWJ: Final = "\u200d"
_REGIONAL_INDICATORS: Final = ("\U0001f1e6", "\U0001f1ff")


def _extends(char: str) -> bool:
    """True if `char` belongs to the character before it, as the user sees it: a
    combining mark (`e` and U+0301 are one `é`), a variation selector, an emoji's skin
    tone or tag, a joiner, or a Hangul vowel or final consonant written apart (NFD)."""
    code = ord(char)
    return (
        unicodedata.category(char) in ("Mn", "Mc", "Me")
        or char == _ZWJ
        or any(first <= code <= last for first, last in VARIATION_SELECTORS)
        or 0x1F3FB <= code <= 0x1F3FF
        or 0xE0020 <= code <= 0xE007F
        or 0x1160 <= code <= 0x11FF
        or 0xD7B0 <= code <= 0xD7FF
    )


def _hangul_leading(code: int) -> bool:
    return 0x1100 <= code <= 0x115F or 0xA960 <= code <= 0xA97F


def _joined(before: str, after: str) -> bool:
    """True if `before` and `after` are one character the user sees though `after` does
    not extend what precedes it: a Hangul leading consonant and the consonant or syllable
    after it, or a virama and the consonant it joins to (an Indic conjunct, `क्ष`)."""
    code = ord(after)
    if _hangul_leading(ord(before)):
        return _hangul_leading(code) or 0xAC00 <= code <= 0xD7A3
    return unicodedata.combining(before) == 9 and unicodedata.category(after) == "Lo"


def _whole_characters(text: str, keep: int) -> int:
    """Where to cut `text` to keep at most `keep` code points without splitting a
    character the user sees as one (a letter and its accents, an emoji sequence, a flag's
    two regional indicators): the label's start stays text the page wrote, not `e` for
    `é` or half a flag."""
    cut = keep
    while 0 < cut < len(text) and (
        _extends(text[cut]) or text[cut - 1] == _ZWJ or _joined(text[cut - 1], text[cut])
    ):
        cut -= 1
    low, high = _REGIONAL_INDICATORS
    run = 0
    while run < cut and low <= text[cut - 1 - run] <= high:
        run += 1
    if run % 2 and cut < len(text) and low <= text[cut] <= high:
        cut -= 1
    return cut
