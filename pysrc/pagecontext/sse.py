"""A sans-IO decoder for server-sent events (the WHATWG `text/event-stream` format).

This module owns turning the text of an event stream, fed in chunks of any size, into
its events: lines end with CRLF, LF or CR (a CR at the end of a chunk waits for the
next one); a line starting with ":" is a comment; `data` lines are joined with "\n";
a blank line dispatches the event (one with no data is dropped); a leading byte-order
mark is skipped. An event still unterminated when the stream ends is dropped, as a
browser's EventSource drops it, and `close` reports it so a caller can tell a cut
stream from a complete one.

Pure: no I/O. The caller decodes bytes to text (for example with a streaming
`TextDecoder`) and feeds the text here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pagecontext.errors import PagecontextError

__all__ = ["DEFAULT_MAX_EVENT_CHARS", "SseDecoder", "SseError", "SseEvent"]

# One event, or one line, may not grow past this.
DEFAULT_MAX_EVENT_CHARS: Final = 1_000_000


class SseError(PagecontextError):
    """The stream broke the format or a limit; the message says which."""


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event: its data, and its `event` type and `id` if the server sent them."""

    data: str
    event: str = "message"
    id: str | None = None


class SseDecoder:
    """Feed text with `feed`; call `close` when the stream ends.

    Each character is looked at once: a line still waiting for its end is kept in
    pieces, and only the new text is searched for line ends.
    """

    def __init__(self, *, max_event_chars: int = DEFAULT_MAX_EVENT_CHARS) -> None:
        self._max = max_event_chars
        self._partial: list[str] = []  # the pieces of the line still waiting for its end
        self._partial_size = 0
        self._data: list[str] = []
        self._size = 0
        self._event = ""
        self._id: str | None = None
        self._started = False
        self._pending_cr = False

    def feed(self, text: str) -> list[SseEvent]:
        """Return the events completed by `text`. Raises SseError over the size limit."""
        if not text:
            return []  # nothing new: a CR still waits for a possible LF
        if not self._started:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._pending_cr and text.startswith("\n"):
            text = text[1:]  # the LF of a CRLF split across chunks
        self._pending_cr = False
        events: list[SseEvent] = []
        start, size = 0, len(text)
        # The next CR and LF at or after `start`, each searched for again only once
        # passed: every character is looked at once, whatever the line endings.
        cr, lf = text.find("\r"), text.find("\n")
        while cr >= 0 or lf >= 0:
            if lf < 0 or 0 <= cr < lf:
                end, after = cr, cr + 1
                if after == size:
                    self._pending_cr = True  # its LF may open the next chunk
                elif text[after] == "\n":
                    after += 1
                    lf = text.find("\n", after)
                cr = text.find("\r", after)
            else:
                end, after = lf, lf + 1
                lf = text.find("\n", after)
            piece = text[start:end]
            if self._partial:
                piece = "".join(self._partial) + piece
                self._partial, self._partial_size = [], 0
            start = after
            self._line(piece, events)
        if start < len(text):
            self._partial.append(text[start:])
            self._partial_size += len(text) - start
        if self._partial_size + self._size > self._max:
            raise SseError(f"an event is longer than {self._max} characters")
        return events

    def close(self) -> bool:
        """End the stream; return True if an unterminated event or line was dropped."""
        cut = bool(self._partial) or bool(self._data)
        self._partial, self._partial_size = [], 0
        self._data = []
        self._size = 0
        return cut

    def _line(self, line: str, events: list[SseEvent]) -> None:
        if len(line) > self._max:
            raise SseError(f"a line is longer than {self._max} characters")
        if not line:
            if self._data:
                events.append(SseEvent("\n".join(self._data), self._event or "message", self._id))
            self._data, self._size, self._event = [], 0, ""
            return
        if line.startswith(":"):
            return
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._size += len(value) + 1
            if self._size > self._max:
                raise SseError(f"an event is longer than {self._max} characters")
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
