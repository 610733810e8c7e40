"""What reading an agent's answer and sending a question cost the assistant's core, natively.

On CPython, with the core's public API only (so that two checkouts can be compared by
running this with each one's `PYTHONPATH`):

- `sse`: the server-sent events decoder (`pagecontext.sse.SseDecoder`) on a stream at the
  edge of its limits: one event of ~1,000,000 characters fed in 10-character chunks, and
  80,000 short events in one chunk;
- `answer`: one answer (`pagecontext.answers.AnswerStream`: text, three tool calls, the
  end) fed in 37-character chunks, as a network delivers it;
- `send`: one question sent (`pagecontext.composer.Composer.send`: the block, dedup
  against what the next run still carries) after 0, 20 and 50 earlier questions, each
  followed by a 4,000-character answer with a tool call.

    PYTHONPATH=pysrc .venv/bin/python bench/stream.py [--out FILE] [--quick]

Prints a table (medians) and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from results_file import write_results

from pagecontext.answers import AnswerStream
from pagecontext.composer import Composer
from pagecontext.models import ContextMessage, parse_message
from pagecontext.sse import SseDecoder

THREAD: Final = "conversation-1"
RUN: Final = "run-1"
EARLIER_QUESTIONS: Final = (0, 20, 50)


def _timed(work: Callable[[], object], repeat: int) -> dict[str, float]:
    """Median, min and max milliseconds of `repeat` calls of `work`."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1000)
    return {
        "n": repeat,
        "median_ms": round(statistics.median(times), 3),
        "min_ms": round(min(times), 3),
        "max_ms": round(max(times), 3),
    }


def _chunks(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def long_line() -> None:
    """One event of ~1,000,000 characters in 10-character chunks."""
    decoder = SseDecoder()
    events = [
        event
        for chunk in _chunks("data: " + "x" * 999_000 + "\n\n", 10)
        for event in decoder.feed(chunk)
    ]
    assert len(events) == 1


def many_events() -> None:
    """80,000 short events in one chunk."""
    events = SseDecoder(max_event_chars=10**9).feed("data: x\n\n" * 80_000)
    assert len(events) == 80_000


def _event(kind: str, **fields: object) -> str:
    return "data: " + json.dumps({"type": kind, **fields}) + "\n\n"


ANSWER: Final = "".join(
    [
        _event("RUN_STARTED", threadId=THREAD, runId=RUN),
        *(_event("TEXT_MESSAGE_CHUNK", messageId="m1", delta=f"word {n} ") for n in range(300)),
        *(
            _event(
                "TOOL_CALL_CHUNK",
                toolCallId=f"c{n}",
                toolCallName="highlight",
                delta=json.dumps({"resourceRef": f"row:{n}"}),
            )
            for n in range(3)
        ),
        _event("RUN_FINISHED", threadId=THREAD, runId=RUN),
    ]
)


def one_answer() -> None:
    stream = AnswerStream(thread_id=THREAD, run_id=RUN)
    updates = [update for chunk in _chunks(ANSWER, 37) for update in stream.feed(chunk)]
    assert len(updates) == 300 + 3 + 1


def _selection() -> ContextMessage:
    message = parse_message(
        {
            "protocol": "pagecontext",
            "version": 1,
            "type": "context",
            "messageId": "m-1",
            "pageInstanceId": "page-1",
            "conversationId": "conversation-1",
            "selectionRevision": 1,
            "selection": {
                "pageId": "sales",
                "componentId": "table",
                "resourceRef": "row:42",
                "observedAt": "2026-05-01T09:30:00.000Z",
                "filters": {"region": "North"},
                "snapshot": {"amount": {"value": 4231, "unit": "units"}, "name": "North"},
            },
        }
    )
    assert isinstance(message, ContextMessage)
    return message


def composer_after(questions: int) -> Composer:
    """A composer with the selection pinned and `questions` earlier questions answered."""
    composer = Composer()
    composer.set_selection(_selection().selection)
    for index in range(questions):
        composer.send(f"question {index}", entry_id=f"q{index}", at="t")
        composer.start_answer(f"r{index}", task_id=f"q{index}", about="row:42")
        composer.answer_text(f"r{index}", "an answer " * 400)
        composer.answer_tool_call(f"r{index}", f"c{index}", "highlight", '{"resourceRef":"row:42"}')
        composer.answer_ended(f"r{index}", "", "")
    return composer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/stream.json"))
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 7
    results: dict[str, Any] = {
        "sse": {
            "one_1m_event_in_10_char_chunks": _timed(long_line, repeat),
            "80000_short_events_in_one_chunk": _timed(many_events, repeat),
        },
        "answer": {"one_answer_in_37_char_chunks": _timed(one_answer, repeat * 10)},
        "send": {},
    }
    for questions in EARLIER_QUESTIONS:
        composer = composer_after(questions)
        counter = iter(range(10**9))

        def send(composer: Composer = composer, counter: Any = counter) -> None:
            composer.send("and now?", entry_id=f"next-{next(counter)}", at="t")

        results["send"][f"after_{questions}_questions"] = _timed(send, repeat * 3)
    print("reading an answer and sending a question, CPython (median ms)")
    for part, measures in results.items():
        for name, measure in measures.items():
            print(f"  {part:6} {name:36} {measure['median_ms']:10.3f}  (n={measure['n']})")
    write_results(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
