"""The page's selection tracker: revisions, what is shared, and the views they were made in.

This module owns the page's selection revision sequence (strictly increasing from 1 per
page instance), the choice of which fields a component shares in a snapshot, and the
retained history of component views that lets the resolver tell whether a command's
basis revision still describes what is on screen (docs/protocol.md section 5, steps 5-7).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

from pydantic import ValidationError

from pagecontext.errors import LocalProtocolError
from pagecontext.models import MAX_SAFE_INTEGER, Quantity, Scalar, Selection

__all__ = ["ComponentView", "FieldSpec", "SelectionTracker"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class FieldSpec:
    """A field a component may share in a snapshot; `unit` makes it a Quantity."""

    name: str
    unit: str | None = None


FilterValue = Scalar | tuple[Scalar, ...]


@dataclass(frozen=True, eq=False)
class ComponentView:
    """The conditions a component is showing: page, filters and data generation.

    Equality is by value and by type: a filter of `1` and a filter of `True` are
    different views, although Python finds `1 == True`.
    """

    page_id: str
    filters: Mapping[str, FilterValue]
    generation: int
    _identity: tuple[object, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        frozen = {key: _frozen_filter(value) for key, value in self.filters.items()}
        # A read-only copy: a caller mutating its dict later must not change this view.
        object.__setattr__(self, "filters", MappingProxyType(frozen))
        tagged = frozenset((key, _tagged(value)) for key, value in frozen.items())
        object.__setattr__(self, "_identity", (self.page_id, tagged, self.generation))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ComponentView):
            return NotImplemented
        return self._identity == other._identity

    def __hash__(self) -> int:
        return hash(self._identity)


def _frozen_filter(value: object) -> FilterValue:
    if isinstance(value, list | tuple):
        return tuple(value)
    return value  # type: ignore[return-value]  # a Scalar by the caller's contract


def _tagged(value: FilterValue) -> object:
    if isinstance(value, tuple):
        return tuple((type(item).__name__, item) for item in value)
    return (type(value).__name__, value)


@dataclass
class _Component:
    shareable: tuple[FieldSpec, ...]
    view: ComponentView | None = None


class SelectionTracker:
    """Issues selection revisions and remembers the views each revision was made in.

    `clock` returns epoch milliseconds; `history` is how many recent revisions are
    retained for command resolution.
    """

    def __init__(
        self, *, page_instance_id: str, clock: Callable[[], float], history: int = 256
    ) -> None:
        if history < 1:
            raise ValueError("history must keep at least one revision")
        self.page_instance_id = page_instance_id
        self._clock = clock
        self._history_size = history
        self._components: dict[str, _Component] = {}
        # Copy-on-write: set_view replaces this dict, so each history entry can share
        # the dict that was current when its revision was issued.
        self._views: Mapping[str, ComponentView] = MappingProxyType({})
        self._history: OrderedDict[int, Mapping[str, ComponentView]] = OrderedDict()
        self._latest_revision = 0
        self._current: Selection | None = None

    @property
    def latest_revision(self) -> int:
        """The last revision issued; 0 before any."""
        return self._latest_revision

    @property
    def current(self) -> Selection | None:
        """The current selection; None before any selection or after clear()."""
        return self._current

    def declare_component(self, component_id: str, shareable: Sequence[FieldSpec]) -> None:
        """Register a component and the fields it may share; redeclaring replaces them."""
        existing = self._components.get(component_id)
        view = existing.view if existing else None
        self._components[component_id] = _Component(tuple(shareable), view)

    def forget_component(self, component_id: str) -> None:
        """Forget a component the page no longer shows: its declaration and its view now.
        The views kept with earlier revisions stay (a command based on one of them is
        checked against them, and finds no view now)."""
        self._components.pop(component_id, None)
        if component_id in self._views:
            self._views = MappingProxyType(
                {key: view for key, view in self._views.items() if key != component_id}
            )

    def set_view(self, component_id: str, view: ComponentView) -> None:
        """Record the component's current view; issues no revision.

        Raises LocalProtocolError for an undeclared component.
        """
        self._component(component_id, "set_view").view = view
        self._views = MappingProxyType({**self._views, component_id: view})

    def select(
        self,
        component_id: str,
        resource_ref: str,
        values: Mapping[str, Scalar],
        check: Callable[[Selection], None] | None = None,
    ) -> tuple[int, Selection]:
        """Issue a revision for a new selection; return it with the Selection.

        The snapshot holds only the component's shareable fields present in `values`
        (as Quantity where the field has a unit), or is None if there are none. Raises
        LocalProtocolError for an undeclared component, one with no view yet, or values
        that are not valid scalars; `check` may raise it too, for a selection it
        refuses, before any revision is issued.
        """
        component = self._component(component_id, "select")
        if component.view is None:
            raise LocalProtocolError(f"can't select in component {component_id!r}: no view set")
        view = component.view
        snapshot: dict[str, Scalar | Quantity] = {}
        making: str | None = None  # the field whose Quantity is being made
        try:
            for spec in component.shareable:
                if spec.name in values:
                    making = spec.name
                    value = values[making]
                    snapshot[making] = (
                        value if spec.unit is None else Quantity(value=value, unit=spec.unit)
                    )
            making = None
            selection = Selection(
                page_id=view.page_id,
                component_id=component_id,
                resource_ref=resource_ref,
                observed_at=self._observed_at(),
                filters={
                    key: list(value) if isinstance(value, tuple) else value
                    for key, value in view.filters.items()
                },
                snapshot=snapshot or None,
            )
        except ValidationError as error:
            raise LocalProtocolError(_refused_data(error, making)) from None
        if check is not None:
            check(selection)
        revision = self._issue(selection)
        return revision, selection

    def shareable(self, selection: Selection) -> Selection:
        """`selection` with only the snapshot fields its component declares shareable
        now: a field the page stopped sharing after the user selected does not leave,
        and nothing of a component the page took off (`forget_component`) does."""
        component = self._components.get(selection.component_id)
        if selection.snapshot is None:
            return selection
        shared = component.shareable if component is not None else ()
        units = {spec.name: spec.unit for spec in shared}
        kept = {
            name: value
            for name, value in selection.snapshot.items()
            if name in units
            and units[name] == (value.unit if isinstance(value, Quantity) else None)
        }
        if len(kept) == len(selection.snapshot):
            return selection
        return selection.model_copy(update={"snapshot": kept or None})

    def narrow(self) -> int | None:
        """Issue a revision for the current selection as its component shares it now
        (`shareable`: fields it stopped declaring left out), and return it; None, and no
        revision, if it shares all of it still (or nothing is selected). A revision never
        carries two contents, so what is shared of a selection after its component
        narrowed is a new one."""
        current = self._current
        if current is None:
            return None
        narrowed = self.shareable(current)
        if narrowed == current:
            return None
        # The views it was selected in, not the ones shown now: a command on it is
        # checked against them (a view changed since is `view-changed`).
        return self._issue(narrowed, self._history.get(self._latest_revision))

    def clear(self) -> int:
        """Issue a revision for a cleared selection; return it."""
        return self._issue(None)

    def current_view(self, component_id: str) -> ComponentView | None:
        """Return the component's view now, or None if unknown or not set."""
        return self._views.get(component_id)

    def view_at(self, revision: int, component_id: str) -> ComponentView | None:
        """Return the component's view as it was when `revision` was issued.

        None if the revision was never issued or is no longer retained, or if the
        component had no view then.
        """
        views = self._history.get(revision)
        return None if views is None else views.get(component_id)

    def is_retained(self, revision: int) -> bool:
        """Return whether `revision` was issued and is still in the retained history."""
        return revision in self._history

    def _component(self, component_id: str, event: str) -> _Component:
        component = self._components.get(component_id)
        if component is None:
            raise LocalProtocolError(f"can't {event}: component {component_id!r} not declared")
        return component

    def _issue(
        self, selection: Selection | None, views: Mapping[str, ComponentView] | None = None
    ) -> int:
        """Issue the next revision for `selection`, in `views` (default: the views now)."""
        if self._latest_revision >= MAX_SAFE_INTEGER:
            raise LocalProtocolError("can't issue a revision: the safe-integer range is spent")
        self._latest_revision += 1
        self._current = selection
        self._history[self._latest_revision] = self._views if views is None else views
        while len(self._history) > self._history_size:
            self._history.popitem(last=False)
        return self._latest_revision

    def _observed_at(self) -> str:
        # Integer arithmetic from whole milliseconds: no float rounding in the ms field.
        seconds, millis = divmod(int(self._clock()), 1000)
        moment = _EPOCH + timedelta(seconds=seconds)
        return f"{moment:%Y-%m-%dT%H:%M:%S}.{millis:03d}Z"


def _refused_data(error: ValidationError, making: str | None) -> str:
    """Why a selection's data is refused. A number past the bound models.Scalar sets (what
    JavaScript holds exactly) is named, with the filter or field holding it (`making`, for
    an error from that field's Quantity); anything else is the model's error."""
    for problem in error.errors():
        if problem["type"] in ("less_than_equal", "greater_than_equal"):
            where = making if making is not None else problem["loc"][1]
            return (
                f"can't select: {where} is {problem['input']!r}, past the numbers JavaScript"
                f" holds exactly (at most {MAX_SAFE_INTEGER:,} either way), which the"
                " assistant refuses"
            )
    return f"can't select: invalid selection data ({error})"
