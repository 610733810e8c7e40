"""The assistant reading an agent's stream: SSE decoding, chunk expansion, run endings."""

from __future__ import annotations

import json

import pytest
from ag_ui.core import (
    BaseEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StepStartedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from pagecontext.answers import (
    MAX_ERROR_CHARS,
    MAX_ID_CHARS,
    MAX_TOOL_CALLS,
    AnswerStream,
    RunEnded,
    TextDelta,
    ToolCallMade,
    Update,
)
from pagecontext.sse import SseDecoder, SseError, SseEvent

THREAD, RUN = "conv-1", "run-1"


def sse(*events: BaseEvent) -> str:
    return "".join(f"data: {event.model_dump_json(by_alias=True)}\n\n" for event in events)


def started() -> RunStartedEvent:
    return RunStartedEvent(thread_id=THREAD, run_id=RUN)


def finished() -> RunFinishedEvent:
    return RunFinishedEvent(thread_id=THREAD, run_id=RUN)


def answer_events() -> list[BaseEvent]:
    return [
        started(),
        TextMessageStartEvent(message_id="m1", role="assistant"),
        TextMessageContentEvent(message_id="m1", delta="North sold "),
        TextMessageContentEvent(message_id="m1", delta="4,231 units.\nThat is high."),
        TextMessageEndEvent(message_id="m1"),
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="highlight", parent_message_id="m1"),
        ToolCallArgsEvent(tool_call_id="c1", delta='{"componentId":"t",'),
        ToolCallArgsEvent(tool_call_id="c1", delta='"resourceRef":"r1","tone":"focus"}'),
        ToolCallEndEvent(tool_call_id="c1"),
        finished(),
    ]


def read(text_parts: list[str], *, end: bool = True) -> list[Update]:
    stream = AnswerStream(thread_id=THREAD, run_id=RUN)
    updates = [update for part in text_parts for update in stream.feed(part)]
    if end:
        updates += stream.end()
    return updates


def text_of(updates: list[Update]) -> str:
    return "".join(u.delta for u in updates if isinstance(u, TextDelta))


def ending(updates: list[Update]) -> RunEnded:
    ends = [u for u in updates if isinstance(u, RunEnded)]
    assert len(ends) == 1, updates
    return ends[0]


# --- SSE ---------------------------------------------------------------------------------


def test_sse_events_end_at_a_blank_line_and_join_data_lines() -> None:
    """An event ends only at a blank line, its data lines joined by line breaks."""
    decoder = SseDecoder()
    assert decoder.feed("data: a\ndata: b\n") == []
    assert decoder.feed("\n") == [SseEvent("a\nb")]


def test_sse_comments_event_types_ids_and_empty_events() -> None:
    """Comments and events with no data are dropped; an event keeps its type and id."""
    decoder = SseDecoder()
    events = decoder.feed(": keep-alive\n\nevent: x\nid: 7\ndata:no space\n\n\n")
    assert events == [SseEvent("no space", "x", "7")]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_sse_accepts_every_line_ending(newline: str) -> None:
    """LF, CRLF and a lone CR each end a line."""
    text = f"data: one{newline}{newline}data: two{newline}{newline}"
    assert SseDecoder().feed(text) == [SseEvent("one"), SseEvent("two")]


def test_sse_a_crlf_split_across_chunks_is_one_line_end() -> None:
    """A CR ending one chunk and an LF starting the next are one line end."""
    decoder = SseDecoder()
    assert decoder.feed("data: one\r") == []
    assert decoder.feed("\n\r") == [SseEvent("one")]
    assert decoder.feed("\ndata: two\n\n") == [SseEvent("two")]


def test_sse_skips_a_leading_byte_order_mark() -> None:
    """A byte order mark at the start of the stream is skipped."""
    assert SseDecoder().feed("\ufeffdata: x\n\n") == [SseEvent("x")]


def test_sse_close_reports_a_cut_event() -> None:
    """Closing says whether the stream stopped partway through an event."""
    decoder = SseDecoder()
    decoder.feed('data: {"half')
    assert decoder.close() is True
    complete = SseDecoder()
    complete.feed("data: x\n\n")
    assert complete.close() is False


def test_sse_refuses_an_event_over_its_limit() -> None:
    """An event past its size limit is refused, as one long line or many short ones."""
    decoder = SseDecoder(max_event_chars=100)
    with pytest.raises(SseError):
        decoder.feed("data: " + "x" * 200)
    lines = SseDecoder(max_event_chars=100)
    with pytest.raises(SseError):
        lines.feed("data: xxxxxxxxx\n" * 20)


def test_sse_refuses_a_field_line_over_its_limit_even_in_one_chunk() -> None:
    """An `id`, `event` or comment line counts against the limit like data does."""
    for line in ("id: ", "event: ", ": "):
        with pytest.raises(SseError):
            SseDecoder(max_event_chars=100).feed(line + "x" * 200 + "\n")


def test_sse_an_empty_chunk_between_the_cr_and_the_lf_changes_nothing() -> None:
    """A CRLF split across chunks stays one line end with an empty chunk between."""
    decoder = SseDecoder()
    events = [e for chunk in ("data: a\r", "", "\ndata: b\n\n") for e in decoder.feed(chunk)]
    assert events == [SseEvent("a\nb")]


@settings(max_examples=200)
@given(st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_sse_chunking_never_changes_the_events(cuts: list[int]) -> None:
    """However the text is split into chunks, the same events come out."""
    text = sse(*answer_events()).replace("\n\n", "\r\n\r\n", 2)
    whole = SseDecoder().feed(text)
    decoder = SseDecoder()
    pieces, last = [], 0
    for cut in sorted(c % (len(text) + 1) for c in cuts):
        pieces.append(text[last:cut])
        last = cut
    pieces.append(text[last:])
    assert [event for piece in pieces for event in decoder.feed(piece)] == whole
    assert len(whole) == len(answer_events())


# --- the answer stream -------------------------------------------------------------------


def test_a_complete_run_gives_text_tool_calls_and_success() -> None:
    """A complete run gives its text, its whole tool call and a successful end."""
    updates = read([sse(*answer_events())])
    assert text_of(updates) == "North sold 4,231 units.\nThat is high."
    calls = [u for u in updates if isinstance(u, ToolCallMade)]
    assert calls == [
        ToolCallMade("c1", "highlight", '{"componentId":"t","resourceRef":"r1","tone":"focus"}')
    ]
    assert ending(updates) == RunEnded("")


@settings(max_examples=50)
@given(st.integers(min_value=1, max_value=50))
def test_the_same_updates_whatever_the_chunk_size(size: int) -> None:
    """Whatever the chunk size, the stream gives the same updates."""
    text = sse(*answer_events())
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    assert read(parts) == read([text])


def test_chunk_events_are_expanded_as_ag_ui_does() -> None:
    """Chunks expand into one message and one tool call, as AG-UI's client does."""
    events = [
        started(),
        TextMessageChunkEvent(message_id="m1", role="assistant", delta="Hello "),
        TextMessageChunkEvent(delta="there."),
        ToolCallChunkEvent(tool_call_id="c1", tool_call_name="locate", delta='{"componentId"'),
        ToolCallChunkEvent(delta=':"t","resourceRef":"r1"}'),
        finished(),
    ]
    updates = read([sse(*events)])
    assert text_of(updates) == "Hello there."
    assert [u for u in updates if isinstance(u, ToolCallMade)] == [
        ToolCallMade("c1", "locate", '{"componentId":"t","resourceRef":"r1"}')
    ]
    assert ending(updates).ok


def test_a_run_error_ends_the_run_with_the_agents_message() -> None:
    """A RUN_ERROR ends the run with the agent's message and its code."""
    updates = read([sse(started(), RunErrorEvent(message="no model", code="down"))])
    assert ending(updates) == RunEnded("run-error", "no model (down)")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("data: not json\n\n", "malformed-event"),
        (sse(TextMessageStartEvent(message_id="m", role="assistant")), "first-event"),
        (sse(started(), TextMessageContentEvent(message_id="x", delta="a")), "unknown-id"),
        (
            sse(started(), TextMessageStartEvent(message_id="m", role="assistant"), finished()),
            "unclosed-at-run-finished",
        ),
        (sse(RunStartedEvent(thread_id="other", run_id=RUN)), "wrong-thread-id"),
        (sse(started(), TextMessageChunkEvent(delta="orphan")), "chunk-without-id"),
    ],
)
def test_a_malformed_stream_ends_the_run_and_says_why(text: str, why: str) -> None:
    """A stream breaking AG-UI's rules ends the run as malformed, saying which rule."""
    updates = read([text])
    end = ending(updates)
    assert end.code == "malformed-stream"
    assert why in end.message


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("data: not json\n\n", "Invalid JSON"),
        (
            'data: {"type":"REASONING_MESSAGE_START","messageId":"m","role":"assistant"}\n\n',
            "(REASONING_MESSAGE_START.role: Input should be 'reasoning')",
        ),
        ('data: {"type":"TEXT_MESSAGE_END"}\n\n', "TEXT_MESSAGE_END.messageId: Field required"),
    ],
)
def test_a_malformed_event_is_refused_saying_where_and_what(text: str, said: str) -> None:
    """The agent's author learns which field of which event type was wrong, not only
    that something was."""
    end = ending(read([sse(started()), text]))
    assert end.code == "malformed-stream"
    assert said in end.message, end.message


def test_nothing_after_a_malformed_event_is_used() -> None:
    """Nothing that follows a malformed event reaches the answer."""
    good = TextMessageContentEvent(message_id="m1", delta="late")
    updates = read(
        [
            sse(started(), TextMessageStartEvent(message_id="m1", role="assistant")),
            "data: {}\n\n",
            sse(good),
        ]
    )
    assert text_of(updates) == ""
    assert ending(updates).code == "malformed-stream"


def test_a_stream_that_stops_early_is_incomplete_and_keeps_its_text() -> None:
    """A stream that stops before its run ends is incomplete and keeps its text; one cut
    mid-event says so."""
    events = answer_events()[:3]
    updates = read([sse(*events)])
    assert text_of(updates) == "North sold "
    assert ending(updates).code == "incomplete"
    cut = read([sse(*events) + 'data: {"type":'])
    assert "cut mid-event" in ending(cut).message


def test_a_transport_failure_ends_the_run_once() -> None:
    """A transport failure ends the run once; nothing after it gives an update."""
    stream = AnswerStream(thread_id=THREAD, run_id=RUN)
    stream.feed(sse(started()))
    assert stream.fail("timeout", "no answer in 60 s") == [RunEnded("timeout", "no answer in 60 s")]
    assert stream.fail("agent-unreachable", "") == []
    assert stream.end() == []
    assert stream.feed(sse(finished())) == []


def test_an_answer_over_its_limit_ends_the_run() -> None:
    """An answer past its size limit ends the run, its text stopped near the limit."""
    stream = AnswerStream(thread_id=THREAD, run_id=RUN, max_chars=10)
    updates = stream.feed(sse(*answer_events()))
    assert ending(updates).code == "malformed-stream"
    assert len(text_of(updates)) <= 11


@pytest.mark.parametrize(
    "event",
    [
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="x" * 257),
        ToolCallStartEvent(tool_call_id="c" * 257, tool_call_name="highlight"),
        TextMessageStartEvent(message_id="m" * 257, role="assistant"),
        StepStartedEvent(step_name="s" * 257),
    ],
)
def test_an_id_or_a_tool_name_over_its_limit_ends_the_run(event: BaseEvent) -> None:
    """Ids and names reach the log and the saved state: one past 256 characters is
    malformed, and nothing of it is kept."""
    updates = read([sse(started(), event, finished())])
    assert ending(updates).code == "malformed-stream"
    assert [u for u in updates if isinstance(u, ToolCallMade)] == []


def test_a_run_errors_message_and_code_are_cut_to_their_limits() -> None:
    """The agent's RUN_ERROR is shown and saved: its message keeps 2,000 characters and
    its code 256."""
    error = RunErrorEvent(message="m" * 5000, code="c" * 5000)
    ended = ending(read([sse(started(), error)]))
    assert ended == RunEnded("run-error", "m" * MAX_ERROR_CHARS + " (" + "c" * MAX_ID_CHARS + ")")


def test_raw_and_activity_events_leave_a_chunked_text_open() -> None:
    """As AG-UI's client expands chunks: RAW, ACTIVITY_* and REASONING_ENCRYPTED_VALUE
    between two chunks of one message keep it one message."""
    run = {"threadId": THREAD, "runId": RUN}
    events = [
        {"type": "RUN_STARTED", **run},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "North "},
        {"type": "RAW", "event": {"any": 1}},
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "PLAN", "content": {}},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "sold "},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "more."},
        {"type": "RUN_FINISHED", **run},
    ]
    updates = read(["".join(f"data: {json.dumps(event)}\n\n" for event in events)])
    assert text_of(updates) == "North sold more."
    assert ending(updates).ok


def test_tool_arguments_count_against_the_answers_limit() -> None:
    """Tool arguments count toward the answer's limit: past it, no call is made."""
    stream = AnswerStream(thread_id=THREAD, run_id=RUN, max_chars=30)
    events = [e for e in answer_events() if not isinstance(e, TextMessageContentEvent)]
    updates = stream.feed(sse(*events))
    assert ending(updates).code == "malformed-stream"
    assert [u for u in updates if isinstance(u, ToolCallMade)] == []


def test_events_after_the_run_finished_are_ignored() -> None:
    """Events after RUN_FINISHED are ignored; the successful end is the last update."""
    late = TextMessageStartEvent(message_id="m9", role="assistant")
    updates = read([sse(*answer_events(), late)])
    assert ending(updates).ok
    assert isinstance(updates[-1], RunEnded)


_OPEN_CALL = {
    "chunked": [
        ToolCallChunkEvent(tool_call_id="c1", tool_call_name="highlight", delta='{"tone":'),
        ToolCallChunkEvent(delta='"focus"}'),
    ],
    "explicit": [
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="highlight"),
        ToolCallArgsEvent(tool_call_id="c1", delta='{"tone":"focus"}'),
    ],
}


@pytest.mark.parametrize("form", sorted(_OPEN_CALL))
@pytest.mark.parametrize(
    ("last", "code"),
    [
        (RunErrorEvent(message="model crashed"), "run-error"),
        (RunFinishedEvent(thread_id=THREAD, run_id="another-run"), "malformed-stream"),
    ],
)
def test_a_tool_call_the_agent_never_ended_is_not_made(
    form: str, last: BaseEvent, code: str
) -> None:
    """A tool call still open when the run fails, or when the event that would close a
    chunked one is refused, is never made: chunked or sent with TOOL_CALL_START alike."""
    updates = read([sse(started(), *_OPEN_CALL[form], last)])
    assert ending(updates).code == code
    assert [u for u in updates if isinstance(u, ToolCallMade)] == []


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        (None, ""),
        ({"type": "success"}, ""),
        ({"type": "cancelled"}, "run-cancelled"),
        ({"type": "interrupt", "interrupts": [{"id": "i1", "reason": "ok?"}]}, "run-interrupted"),
    ],
)
def test_a_run_finished_that_is_no_success_ends_with_its_own_code(
    outcome: dict[str, object] | None, code: str
) -> None:
    """RUN_FINISHED with outcome `cancelled` or `interrupt` is not a finished answer."""
    run = {"threadId": THREAD, "runId": RUN}
    last = {"type": "RUN_FINISHED", **run, **({"outcome": outcome} if outcome else {})}
    updates = read([sse(started()) + f"data: {json.dumps(last)}\n\n"])
    assert ending(updates).code == code


def test_a_character_cut_across_two_deltas_is_joined_and_a_lone_half_replaced() -> None:
    """JavaScript's JSON.stringify escapes each half of a character that a delta cut in
    two ("\\ud83d", then "\\ude00"): valid JSON, and the text reads as one character. A
    half that never gets its pair, in text, arguments or any other string, reaches the
    answer as U+FFFD, never as a lone surrogate."""
    payloads = [
        f'{{"type":"RUN_STARTED","threadId":"{THREAD}","runId":"{RUN}"}}',
        '{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}',
        '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"ok \\ud83d"}',
        '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\\ude00 done \\udc00."}',
        '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":" Cut: \\ud83d"}',
        '{"type":"TEXT_MESSAGE_END","messageId":"m"}',
        '{"type":"TOOL_CALL_START","toolCallId":"c\\ud800","toolCallName":"flag_for_review"}',
        '{"type":"TOOL_CALL_ARGS","toolCallId":"c\\ud800","delta":"{\\"note\\": \\"\\ud83d"}',
        '{"type":"TOOL_CALL_ARGS","toolCallId":"c\\ud800","delta":"\\ude00\\"}"}',
        '{"type":"TOOL_CALL_END","toolCallId":"c\\ud800"}',
        '{"type":"RUN_ERROR","message":"bad \\udfff"}',
    ]
    updates = read(["".join(f"data: {payload}\n\n" for payload in payloads)])
    assert text_of(updates) == "ok \U0001f600 done \ufffd. Cut: \ufffd"
    [call] = [u for u in updates if isinstance(u, ToolCallMade)]
    assert (call.call_id, json.loads(call.arguments)) == ("c\ufffd", {"note": "\U0001f600"})
    assert ending(updates) == RunEnded("run-error", "bad \ufffd")


def test_a_run_making_more_tool_calls_than_its_limit_ends_before_the_extra_one() -> None:
    """An agent that goes on calling tools past MAX_TOOL_CALLS: the calls up to the limit
    are made, the one past it is not (it would become a command to the page or a
    proposal), and the run ends malformed, saying why."""
    events: list[BaseEvent] = [started()]
    for index in range(MAX_TOOL_CALLS + 1):
        call = f"c{index}"
        events += [
            ToolCallStartEvent(tool_call_id=call, tool_call_name="locate"),
            ToolCallArgsEvent(tool_call_id=call, delta='{"componentId":"t"}'),
            ToolCallEndEvent(tool_call_id=call),
        ]
    events.append(finished())
    updates = read([sse(*events)])
    made = [u.call_id for u in updates if isinstance(u, ToolCallMade)]
    assert made == [f"c{index}" for index in range(MAX_TOOL_CALLS)]
    end = ending(updates)
    assert end.code == "malformed-stream"
    assert f"more than {MAX_TOOL_CALLS} tool calls" in end.message


@pytest.mark.parametrize(
    ("chunk", "why"),
    [
        (ToolCallChunkEvent(tool_call_id="c1", delta='{"componentId":"t"}'), "chunk-without-name"),
        (ToolCallChunkEvent(delta='{"componentId":"t"}'), "chunk-without-id"),
        (
            ToolCallChunkEvent(tool_call_id="c1", tool_call_name="", delta="{}"),
            "chunk-without-name",
        ),
    ],
)
def test_a_tool_chunk_that_opens_no_call_ends_the_run_and_makes_none(
    chunk: ToolCallChunkEvent, why: str
) -> None:
    """A first TOOL_CALL_CHUNK without a tool's name, or without an id, can open no tool
    call: the run ends malformed saying which, and no call is made."""
    updates = read([sse(started(), chunk, finished())])
    end = ending(updates)
    assert end.code == "malformed-stream"
    assert why in end.message
    assert [u for u in updates if isinstance(u, ToolCallMade)] == []
