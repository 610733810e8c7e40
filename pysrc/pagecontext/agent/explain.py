"""The built-in agent's reasoning: explain one sales row from live data, or say why not.

This module owns what the deterministic agent says and which page tools it calls, from
the pinned task (`TaskContext`) and the outcome of re-reading the row:

- `ReadRefused` (401, 403, 404): the answer says explicitly that access was denied or
  revoked (or the row is gone) and uses nothing from the snapshot: no value the user
  saw reaches the answer in place of access the user no longer has.
- `LiveRead`: the answer names the row and the time it is based on (`readAt`); compares
  units sold with the region's average over its visible months (ratio and difference),
  with the previous month (change in %) and with the month's other regions; says what
  drives the difference (volume or price, from revenue per unit); and where the live
  value differs from the snapshot, states both values and when each was seen.
  It highlights the row (`focus`) and the rows it cites (`related`: the previous month
  and the month's region it names, the next highest for a row that ranks first, else
  the one just above it) in the task's component, if its id is shaped as an id
  (`COMPONENT_ID`: the calls' arguments come back to the agent as its own, and other
  text from the page is not repeated as the agent's), and proposes `flag_for_review`
  for a row at least 1.5 times, or at most two thirds of, its region's average (no
  ratio, and no proposal, when that average is 0).

Pure: numbers in, text and tool calls out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from pagecontext.agui import FLAG_TOOL, TaskContext
from pagecontext.models import Quantity

__all__ = [
    "COMPONENT_ID",
    "NO_SELECTION",
    "Answer",
    "LiveRead",
    "PlannedToolCall",
    "ReadRefused",
    "SalesFigures",
    "explain",
]

# Where the answer starts a new paragraph (the chunks stream as they are).
_PARAGRAPH: Final = "\n\n"
OUTLIER_HIGH: Final = 1.5
OUTLIER_LOW: Final = 2 / 3
# A component id the agent repeats in its highlight calls: letters, digits and `_.:-`,
# at most 64, as a page's markup names its components ("sales-table").
COMPONENT_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
# The live columns a snapshot field may be compared with, and how an answer names each.
_COLUMNS: Final = {"unitsSold": "units sold", "revenueEur": "revenue"}


@dataclass(frozen=True)
class SalesFigures:
    """One row as the resource API returns it."""

    ref: str
    region: str
    month: str
    units_sold: int
    revenue_eur: float

    @classmethod
    def from_json(cls, row: object) -> SalesFigures:
        """Read a row `{ref, region, month, unitsSold, revenueEur}`; raise ValueError if not one."""
        if not isinstance(row, Mapping):
            raise ValueError("not a sales row")
        try:
            units, revenue = row["unitsSold"], row["revenueEur"]
            if not isinstance(units, int) or not isinstance(revenue, int | float):
                raise TypeError
            return cls(
                str(row["ref"]), str(row["region"]), str(row["month"]), units, float(revenue)
            )
        except (KeyError, TypeError):
            raise ValueError(f"not a sales row: {sorted(row)}") from None

    def value(self, column: str) -> float:
        return self.units_sold if column == "unitsSold" else self.revenue_eur


@dataclass(frozen=True)
class LiveRead:
    """The row read live with the user's authorization, its context, and when it was read."""

    row: SalesFigures
    region_rows: Sequence[SalesFigures]
    month_rows: Sequence[SalesFigures]
    withheld: int
    read_at: str


@dataclass(frozen=True)
class ReadRefused:
    """The read was refused: by the resource API (`status` 401, 403 or 404, with its
    reason), or before it, for a ref that is no row id of the data (`read` False: 400,
    `malformed-ref`)."""

    status: int
    reason: str
    read: bool = True


@dataclass(frozen=True)
class PlannedToolCall:
    """A tool call the agent makes: its name and JSON-ready arguments."""

    name: str
    arguments: Mapping[str, object]


@dataclass(frozen=True)
class Answer:
    """What the agent says, as chunks to stream in order, and the tool calls that follow."""

    chunks: Sequence[str]
    tool_calls: Sequence[PlannedToolCall] = field(default_factory=tuple)

    @property
    def text(self) -> str:
        """The whole answer."""
        return "".join(self.chunks)


# The answer to a question with no selection pinned to it (none made, or its chip
# removed): nothing to read, and what to do.
NO_SELECTION: Final = Answer(
    (
        "I can only answer about a row or a chart segment you select. ",
        "Select one on the page and press Ask AI (or bring back the context you removed), "
        "then ask again.",
    )
)


def _units(value: float) -> str:
    return f"{value:,.0f} units"


def _eur(value: float) -> str:
    return f"{value:,.2f} EUR"


def _amount(column: str, value: float) -> str:
    return _units(value) if column == "unitsSold" else _eur(value)


def _in_full(column: str, value: float) -> str:
    """`value` with every digit it has, in the column's unit."""
    return f"{value:,} {'units' if column == 'unitsSold' else 'EUR'}"


def _signed_percent(new: float, old: float) -> str:
    if old == 0:  # a month that sold nothing: no percentage of it
        return "unchanged" if new == 0 else "up from none"
    return f"{(new - old) / old * 100:+.1f}%"


def explain(
    task: TaskContext, outcome: LiveRead | ReadRefused, *, flag_proposed: bool = False
) -> Answer:
    """Return the answer about `task`'s row, from `outcome` alone when access was refused.
    `flag_proposed`: this conversation proposed flagging the row already (its answer
    says so, and does not propose it again)."""
    if isinstance(outcome, ReadRefused):
        return _refused(task, outcome)
    return _explained(task, outcome, flag_proposed)


def _refused(task: TaskContext, refused: ReadRefused) -> Answer:
    # Only the ref and the status: the snapshot's values must not stand in for access.
    why = {
        400: "it is not a row of the sales data I read (their ids look like sales-2026-03-north)",
        401: "your sign-in was not accepted by the server",
        403: "your access to it has been revoked or was never granted",
        404: "it no longer exists on the server",
    }.get(refused.status, f"the server refused the read ({refused.reason})")
    # A ref is named only if the resource API was asked for it, so it is a row id of the
    # data; any other text came from the page and is not repeated as the agent's words.
    named = task.resource_ref if refused.read else "the row you selected"
    said = f"I could not read {named} because {why} (HTTP {refused.status}, {refused.reason}). "
    if refused.status in (400, 404):
        # A ref of other data, or a row that is gone: no denial, and nothing to ask for.
        lead, then = "", ": pick another row."
    else:
        # A refusal of the user's access, or one the server does not explain.
        lead = "Access denied: "
        then = (
            ", since it may no longer be yours to see. Ask for access again, or pick another row."
        )
    return Answer((lead + said, "I will not answer from the copy your page showed earlier" + then))


def _explained(task: TaskContext, live: LiveRead, flag_proposed: bool) -> Answer:
    row = live.row
    chunks = [
        f"About {row.ref} ({row.region}, {row.month}), based on the live data read at "
        f"{live.read_at}. ",
        *_snapshot_versus_live(task, live),
        _PARAGRAPH,
    ]
    others_in_region = [r for r in live.region_rows if r.ref != row.ref]
    year = [*others_in_region, row]
    average = sum(r.units_sold for r in year) / len(year)
    # No ratio to an average of nothing sold: it would read as "at most two thirds".
    ratio = row.units_sold / average if average > 0 else None
    times = f"{ratio:.2f} times its average" if ratio is not None else "against an average"
    chunks.append(
        f"{row.region} sold {_units(row.units_sold)} in {row.month}, {times} of "
        f"{_units(average)} over the {len(year)} months shown "
        f"({row.units_sold - average:+,.0f} units). "
    )
    related: list[SalesFigures] = []
    previous = _previous_month(row, others_in_region)
    if previous is None:
        chunks.append("There is no previous month in the data to compare with. ")
    else:
        related.append(previous)
        chunks.append(
            f"Against {previous.month} ({_units(previous.units_sold)}) that is "
            f"{_signed_percent(row.units_sold, previous.units_sold)}. "
        )
    others_in_month = sorted(
        (r for r in live.month_rows if r.ref != row.ref), key=lambda r: -r.units_sold
    )
    if others_in_month:
        above = [r for r in others_in_month if r.units_sold > row.units_sold]
        rank = 1 + len(above)
        month_average = sum(r.units_sold for r in others_in_month) / len(others_in_month)
        # A row that ranks first cites the region next below it; any other, the one just
        # above it.
        cited, which = (above[-1], "next higher") if above else (others_in_month[0], "next highest")
        chunks.append(
            f"In {row.month} it ranks {rank} of {len(others_in_month) + 1} regions; the other "
            f"regions averaged {_units(month_average)}, the {which} being {cited.region} "
            f"with {_units(cited.units_sold)}. "
        )
        related.append(cited)
    chunks += [_PARAGRAPH, _driver(row, year)]
    if live.withheld:
        chunks.append(
            f"{live.withheld} related rows are not visible to you and are left out of "
            "these comparisons. "
        )
    calls = []
    if COMPONENT_ID.fullmatch(task.component_id):
        calls.append(_highlight(task, row.ref, "focus"))
        calls.extend(_highlight(task, r.ref, "related") for r in related)
    if ratio is not None and (ratio >= OUTLIER_HIGH or ratio <= OUTLIER_LOW):
        if flag_proposed:
            # Once per conversation: the panel still shows that proposal and its outcome.
            chunks.append(
                "It stands out enough to flag for review, which I proposed earlier in this "
                "conversation."
            )
        else:
            chunks.append("It stands out enough that I propose flagging it for review.")
            note = f"{ratio:.2f} times the {row.region} average of {_units(average)}"
            calls.append(PlannedToolCall(FLAG_TOOL, {"resourceRef": row.ref, "note": note}))
    return Answer(_paragraphs(chunks), tuple(calls))


def _paragraphs(chunks: Sequence[str]) -> tuple[str, ...]:
    """The chunks with each `_PARAGRAPH` as a blank line, and no space before it or at
    the end."""
    out: list[str] = []
    for chunk in chunks:
        if chunk == _PARAGRAPH and out:
            out[-1] = out[-1].rstrip()
        out.append(chunk)
    if out:
        out[-1] = out[-1].rstrip()
    return tuple(out)


def _previous_month(row: SalesFigures, others: Sequence[SalesFigures]) -> SalesFigures | None:
    year, month = (int(part) for part in row.month.split("-"))
    wanted = f"{year - 1}-12" if month == 1 else f"{year}-{month - 1:02d}"
    return next((r for r in others if r.month == wanted), None)


def _driver(row: SalesFigures, year: Sequence[SalesFigures]) -> str:
    # Revenue = units x price: if the price per unit is near the region's usual, volume
    # is what moved; otherwise the price did.
    if not row.units_sold:
        return f"With no units sold in {row.month}, there is no revenue per unit to compare. "
    price = row.revenue_eur / row.units_sold
    usual = sum(r.revenue_eur for r in year) / max(1, sum(r.units_sold for r in year))
    text = (
        f"Revenue per unit was {_eur(price)} against {_eur(usual)} for {row.region} over "
        "the same months, so "
    )
    if price == usual or (usual and abs(price - usual) / usual < 0.05):
        return text + "the difference comes from the number of units sold, not from price. "
    return text + "price changed as well as volume. "


def _snapshot_versus_live(task: TaskContext, live: LiveRead) -> list[str]:
    differences: list[str] = []
    compared = 0
    for column in _COLUMNS:
        seen = task.snapshot.get(column)
        seen_value = seen.value if isinstance(seen, Quantity) else seen
        if isinstance(seen_value, bool) or not isinstance(seen_value, int | float):
            continue
        # Exact as a float: a snapshot's numbers are at most MAX_SAFE_INTEGER.
        seen_number = float(seen_value)
        now = live.row.value(column)
        compared += 1
        if abs(now - seen_number) > 1e-9:
            seen_text, now_text = _amount(column, seen_number), _amount(column, now)
            if seen_text == now_text:
                # A difference finer than the amounts are written with: in full, so the
                # answer never says a value changed and shows it the same.
                seen_text, now_text = _in_full(column, seen_number), _in_full(column, now)
            differences.append(
                f"You saw {seen_text} at {task.observed_at}; the live value "
                f"read at {live.read_at} is {now_text}. "
            )
    if differences:
        return ["The data changed since you looked. ", *differences, "I use the live values. "]
    if not compared:
        return ["Your selection carried no values to compare with the live ones. "]
    return [f"The live values match what you saw at {task.observed_at}. "]


def _highlight(task: TaskContext, ref: str, tone: str) -> PlannedToolCall:
    return PlannedToolCall(
        "highlight", {"componentId": task.component_id, "resourceRef": ref, "tone": tone}
    )
