"""What the model is shown about the pinned selection.

Owns the one composition the panel previews today: the code's standing instruction in
the trusted block, then the selection's reference and snapshot items, redacted by their
schemas, in the untrusted block (see docs/context-block.md). The snapshot holds only
the fields the page's component declared shareable (the tracker drops the rest), so
those are the public fields; anything else in it would be redacted.
"""

from __future__ import annotations

from typing import Final

from pagecontext.block import render_block
from pagecontext.items import Instruction
from pagecontext.models import Selection
from pagecontext.redact import redact_items
from pagecontext.selection_items import (
    REFERENCE_TYPE,
    SNAPSHOT_TYPE,
    reference_schema,
    selection_items,
    snapshot_schema,
)

__all__ = ["STANDING_INSTRUCTIONS", "selection_block"]

STANDING_INSTRUCTIONS: Final = (
    Instruction(
        "You are the assistant beside the user's business page; the question is about"
        " the selection described in the data block, as the user saw it at observedAt."
    ),
)


def selection_block(selection: Selection, label: str) -> str:
    """Return the block the model would be given for `selection`, chip label `label`."""
    schemas = {
        REFERENCE_TYPE: reference_schema(),
        SNAPSHOT_TYPE: snapshot_schema(public=(selection.snapshot or {}).keys()),
    }
    items = redact_items(selection_items(selection, label), schemas)
    return render_block(STANDING_INSTRUCTIONS, items)
