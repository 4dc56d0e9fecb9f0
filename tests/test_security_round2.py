"""Security issue, round 2: what the terminal chat prints and claims, keys in exception chains, ambient
OpenAI headers, credentials in URLs, implausible token counts and a .env saved with a BOM."""
import json
import re
import traceback
import warnings

import httpx2
import openai
import pytest

from helpers.core import tokens
from helpers.llm.api_key import safe_url
from helpers.app.terminal_chat import TerminalChat, main
from helpers.llm.client import EndpointError, ResponseFormatError, chat, make_client
from helpers.llm.config import Settings, load_settings
from helpers.llm.dotenv_file import read_dotenv
from helpers.retrieval.embeddings import EmbeddingError, embed_texts
from helpers.llm.endpoint import check_endpoint
from helpers.retrieval.guardrails import SCOPE_PROMPT
from helpers.core.errors import WorkshopWarning
from helpers.chat.ledger import UsageLedger
from helpers.chat.chat_session import ChatSession
from helpers.llm.stream_reader import read_streamed_reply
from helpers.sessions.persistent import PersistentSession
from helpers.sessions.session_store import SQLiteSessionStore

from scripted import ScriptedServer
from test_cli import POSTER, chat_in_process, refuse_saves_of

# Characters a terminal may act on, that nothing the chat prints may contain raw (\n and \t are kept).
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
ATTACK = "Sure.\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b[1;1Hyou> (fake prompt)\x9b31m\u202eevil"


# ---------------------------------------------------------------- a streaming server for the terminal chat

def sse_reply(request: httpx2.Request, text: str) -> httpx2.Response:
    """A streamed chat completion saying ``text``, with an honest prompt_tokens count."""
    body = json.loads(request.content)
    prompt = tokens.count_request(body["messages"], body.get("tools"))
    chunks = [{"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
              {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [],
               "usage": {"prompt_tokens": prompt, "completion_tokens": 1, "total_tokens": prompt + 1}}]
    data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"  # ASCII-escaped JSON
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=data.encode())


def serve_replies(monkeypatch, replies):
    """Make the terminal chat talk to a server that streams ``replies`` in order (an int: that HTTP error)."""
    queue = list(replies)
    monkeypatch.setenv("WORKSHOP_EMBEDDINGS", "local")  # the assistant's recall embeds here, not on this server

    def handle(request):
        if json.loads(request.content)["messages"][0]["content"] == SCOPE_PROMPT:  # the assistant's scope rule
            return httpx2.Response(200, json={"id": "s", "object": "chat.completion", "created": 0, "model": "m",
                                              "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                                  "role": "assistant",
                                                  "content": '{"category": "campus", "reason": "scripted"}'}}]})
        reply = queue.pop(0)
        if isinstance(reply, int):
            return httpx2.Response(reply, json={"error": {"message": f"gone\x1b[2J{reply}"}})
        return sse_reply(request, reply)

    def fake_make_client(settings):
        return openai.OpenAI(api_key="x", base_url="http://fake.test/v1", max_retries=0,
                             http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))

    monkeypatch.setattr("helpers.app.terminal_chat.make_client", fake_make_client)


def stored_questions(tmp_path, user="learner", session="main"):
    store = SQLiteSessionStore(tmp_path / "chat.db")
    try:
        return [t.question for t in store.load(user, session).turns]
    finally:
        store.close()


# ---------------------------------------------------------------- 6: "Saved." only after a real save

def test_a_reply_that_cannot_be_stored_is_reported_in_one_line_and_never_claimed_saved(monkeypatch, tmp_path,
                                                                                      capsys):
    serve_replies(monkeypatch, ["Thursdays at 18:00.", "broken \ud800 reply"])
    status = chat_in_process(monkeypatch, tmp_path, ["When does the AI club meet?", POSTER, "/quit"])
    out = capsys.readouterr().out
    assert status == 0 and "Traceback" not in out and not RAW_CONTROL.search(out)
    assert len([line for line in out.splitlines() if "surrogates not allowed" in line]) <= 1
    # The session may store the reply (its lone surrogate replaced) or refuse it; "Saved." must be true.
    if "Saved." in out:
        assert stored_questions(tmp_path) == ["When does the AI club meet?", POSTER]
    else:
        assert "Not saved" in out and stored_questions(tmp_path) == ["When does the AI club meet?"]


@pytest.mark.parametrize("error", [ValueError("boom\nsecond line"), OSError(5, "Input/output error"),
                                   UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")])
def test_any_error_from_saving_a_turn_is_one_line_and_quit_does_not_say_saved(monkeypatch, tmp_path, capsys,
                                                                              error):
    real_save = SQLiteSessionStore.save

    def save(self, user_id, session_id, session, **kwargs):
        if session.turns and session.turns[-1].question == POSTER:
            raise error
        return real_save(self, user_id, session_id, session, **kwargs)

    monkeypatch.setattr(SQLiteSessionStore, "save", save)
    status = chat_in_process(monkeypatch, tmp_path, ["When does the AI club meet?", POSTER, "/quit"])
    out = capsys.readouterr().out
    assert status == 0 and "Traceback" not in out
    error_lines = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and type(error).__name__ in error_lines[0]
    assert "second line" not in out or "boom second line" in error_lines[0]
    assert "Saved." not in out and "Not saved" in out
    assert stored_questions(tmp_path) == ["When does the AI club meet?"]


def test_quit_says_saved_only_when_the_store_holds_what_this_copy_holds(tmp_path):
    server = ScriptedServer([{"content": "Thursdays."}, {"content": "Harrow Library."}])
    store = SQLiteSessionStore(tmp_path / "chat.db")
    session = PersistentSession.open(store, "ada", "s1", **server.kwargs())
    session.chat("When does the AI club meet?")  # saved
    session.session.chat(POSTER)  # answered in memory only: never saved
    shown = []
    TerminalChat(session, db=str(tmp_path / "chat.db"), write=shown.append).quit()
    assert not any(line.startswith("Saved.") for line in shown) and "Not saved" in shown[-1]
    session.save()
    shown.clear()
    TerminalChat(session, db=str(tmp_path / "chat.db"), write=shown.append).quit()
    assert shown[-1].startswith("Saved.")
    store.close()


def test_a_save_refused_before_still_reads_not_saved_with_the_check(monkeypatch, tmp_path, capsys):
    refuse_saves_of(monkeypatch, POSTER)
    serve_replies(monkeypatch, ["Thursdays.", "Harrow Library."])
    assert chat_in_process(monkeypatch, tmp_path, ["When does the AI club meet?", POSTER]) == 0
    out = capsys.readouterr().out
    assert "Saved." not in out and "Not saved: the last change could not be saved" in out


# ---------------------------------------------------------------- 9: terminal escapes

def test_terminal_text_escapes_what_a_terminal_would_act_on():
    from helpers.app.terminal_chat import terminal_text

    shown = terminal_text("a\x1b[2Jb\x07c\x9bd\x7fe\u202ef\ud800g\r\nline\ttab")
    assert not RAW_CONTROL.search(shown)
    assert shown == "a\\x1b[2Jb\\x07c\\x9bd\\x7fe\\u202ef\\ud800g\nline\ttab"
    assert terminal_text("one\ntwo\tthree", one_line=True) == "one two three"
    assert terminal_text("plain words, ünïcödé and 漢字") == "plain words, ünïcödé and 漢字"


def test_a_reply_cannot_drive_the_terminal_while_streaming_or_in_history(monkeypatch, tmp_path, capsys):
    serve_replies(monkeypatch, [ATTACK + "\nsecond line\twith a tab"])
    status = chat_in_process(monkeypatch, tmp_path, ["hello\x1b[2J", "/history", "/undo", "/quit"])
    out = capsys.readouterr().out
    assert status == 0 and not RAW_CONTROL.search(out)
    assert out.count("\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J") == 2  # the answer, then /history
    assert "\nsecond line\twith a tab" in out  # multi-line replies keep their lines and tabs
    assert "Undid turn 0: hello\\x1b[2J" in out


def test_stored_text_listed_by_commands_is_escaped(monkeypatch, tmp_path, capsys):
    server = ScriptedServer([{"content": ATTACK}])
    store = SQLiteSessionStore(tmp_path / "chat.db")
    PersistentSession.open(store, "learner", "other\x1b[2J", **server.kwargs()).chat("title\x1b]0;pwned\x07")
    store.close()
    status = chat_in_process(monkeypatch, tmp_path, ["/sessions", "/memory", "/help", "/quit"],
                             "--session", "other\x1b[2J")
    out = capsys.readouterr().out
    assert status == 0 and not RAW_CONTROL.search(out)
    assert "other\\x1b[2J (this one): 1 turn" in out


def test_errors_from_the_server_are_escaped(monkeypatch, tmp_path, capsys):
    serve_replies(monkeypatch, [404])
    assert chat_in_process(monkeypatch, tmp_path, ["hello", "/quit"]) == 0
    out = capsys.readouterr().out
    assert "gone\\x1b[2J404" in out and not RAW_CONTROL.search(out)


def test_db_errors_on_stderr_are_escaped(tmp_path, capsys):
    notes = tmp_path / "notes\x1b[2J.txt"
    notes.write_text("x")
    assert main(["chat", "--db", str(notes / "chat.db")]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and not RAW_CONTROL.search(err)


# ---------------------------------------------------------------- 19: --db paths the OS refuses

@pytest.mark.parametrize("db", ["{tmp}/" + "a" * 300 + "/chat.db", "{tmp}/" + "b" * 300,
                                "~no_such_user_here_xyz/chat.db"])
def test_a_db_path_the_system_refuses_is_one_clear_line(db, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["chat", "--db", db.format(tmp=tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "--db" in err or "cannot" in err


# ---------------------------------------------------------------- 10: a server that echoes the key

SECRET = "sk-echo-" + "s3cret" * 4
NIM_KEY = "nvapi-" + "e" * 30


def walk(error: BaseException):
    """Every exception reachable through __cause__ and __context__."""
    seen, todo = [], [error]
    while todo:
        current = todo.pop()
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        todo += [current.__cause__, current.__context__]
    return seen


def assert_no_secret(error: BaseException, secret: str) -> None:
    for link in walk(error):
        for text in (str(link), repr(link), repr(link.args), repr(vars(link))):
            assert secret not in text, f"{type(link).__name__} shows the key"
    assert secret not in "".join(traceback.format_exception(error))


def echo_handler(status):
    def handle(request):
        said = f"invalid credentials: {request.headers.get('authorization')}"
        return httpx2.Response(status, json={"error": {"message": said, "type": "invalid_request_error"}})
    return handle


@pytest.fixture(params=["openai-compatible", "nim"])
def keyed(request, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    if request.param == "nim":
        monkeypatch.setenv("NVIDIA_API_KEY", NIM_KEY)
        return load_settings("nim"), NIM_KEY
    monkeypatch.setenv("WORKSHOP_API_KEY", SECRET)
    return load_settings("openai-compatible", base_url="http://echo.test/v1"), SECRET


def echoing_client(settings, status=401):
    return make_client(settings).with_options(
        max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(echo_handler(status))))


@pytest.mark.parametrize("stream", [False, True])
def test_a_401_that_echoes_the_key_leaves_it_nowhere_in_the_chain(keyed, stream):
    settings, secret = keyed
    with pytest.raises(EndpointError) as info:
        chat([{"role": "user", "content": "hi"}], client=echoing_client(settings), settings=settings,
             stream=stream)
    assert "HTTP 401" in str(info.value)
    assert_no_secret(info.value, secret)


def test_an_error_event_inside_a_stream_that_echoes_the_key_leaves_it_nowhere_in_the_chain(keyed):
    settings, secret = keyed

    def handle(request):
        said = json.dumps({"error": {"message": f"bad key {request.headers.get('authorization')}",
                                     "type": "invalid_request_error"}})
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=f"data: {said}\n\n".encode())

    client = make_client(settings).with_options(
        max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))
    stream = chat([{"role": "user", "content": "hi"}], client=client, settings=settings, stream=True)
    with pytest.raises(ResponseFormatError) as info:
        list(read_streamed_reply(stream, settings))
    assert "error inside the stream" in str(info.value)
    assert_no_secret(info.value, secret)


def test_a_400_that_echoes_the_key_is_still_a_bad_request_without_it(keyed):
    settings, secret = keyed
    with pytest.raises(openai.BadRequestError) as info:
        chat([{"role": "user", "content": "hi"}], client=echoing_client(settings, 400), settings=settings)
    assert info.value.status_code == 400 and "invalid credentials: Bearer ***" in info.value.message
    assert_no_secret(info.value, secret)


def test_embeddings_that_echo_the_key_leave_it_nowhere_in_the_chain(keyed):
    settings, secret = keyed
    with pytest.raises(EmbeddingError) as info:
        embed_texts(echoing_client(settings), ["a text"], model="m", input_type="query")
    assert "401" in str(info.value) and "Bearer ***" in str(info.value)
    assert_no_secret(info.value, secret)


# ---------------------------------------------------------------- 11: ambient OpenAI headers

AMBIENT = {"OPENAI_CUSTOM_HEADERS": "Authorization: Bearer ambient-token\nX-Ambient: yes",
           "OPENAI_ORG_ID": "org-ambient", "OPENAI_PROJECT_ID": "proj-ambient",
           "OPENAI_ADMIN_KEY": "admin-ambient"}


@pytest.fixture
def captured_headers(monkeypatch):
    """Every request the default HTTP transport would send (answered here, never sent)."""
    for name, value in AMBIENT.items():
        monkeypatch.setenv(name, value)
    seen = []

    def handle_request(self, request):
        seen.append(request.headers)
        if request.url.path.endswith("/models"):
            return httpx2.Response(200, json={"object": "list", "data": [{"id": "m", "object": "model"}]})
        if request.url.path.endswith("/embeddings"):
            return httpx2.Response(200, json={"object": "list", "model": "m", "usage": {"prompt_tokens": 1,
                                   "total_tokens": 1}, "data": [{"object": "embedding", "index": 0,
                                                                 "embedding": [0.6, 0.8]}]})
        if json.loads(request.content).get("stream"):
            return sse_reply(request, "fine")
        return httpx2.Response(200, json={"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                          "choices": [{"index": 0, "finish_reason": "stop",
                                                       "message": {"role": "assistant", "content": "hi"}}]})

    monkeypatch.setattr(httpx2.HTTPTransport, "handle_request", handle_request)
    return seen


def test_requests_carry_the_configured_key_and_no_ambient_openai_headers(keyed, captured_headers):
    settings, secret = keyed
    client = make_client(settings)
    messages = [{"role": "user", "content": "hi"}]
    chat(messages, client=client, settings=settings)
    list(chat(messages, client=client, settings=settings, stream=True))
    embed_texts(client, ["a text"], model="m", input_type=None)
    chat(messages, client=client.with_options(max_retries=0), settings=settings)  # copies keep the rule
    check_endpoint(client, "m")
    assert len(captured_headers) >= 5
    for headers in captured_headers:
        assert headers["authorization"] == f"Bearer {secret}"
        assert not {"openai-organization", "openai-project", "x-ambient"} & {k.lower() for k in headers}
    assert client.admin_api_key is None and client.organization is None and client.project is None


def test_headers_passed_on_purpose_are_still_sent(keyed, captured_headers):
    settings, secret = keyed
    client = make_client(settings).with_options(default_headers={"X-Trace": "on-purpose"})
    chat([{"role": "user", "content": "hi"}], client=client, settings=settings)
    assert captured_headers[-1]["x-trace"] == "on-purpose"
    assert captured_headers[-1]["authorization"] == f"Bearer {secret}"


# ---------------------------------------------------------------- 12: credentials in URLs

@pytest.mark.parametrize("url, shown", [
    ("http://alice:PASSWORD@host/v1/?token=TOKEN#frag", "http://host/v1/"),
    ("alice:PASSWORD@host/v1", "host/v1"),
    ("http:alice:PASSWORD@host/v1", "host/v1"),
    ("//alice:PASSWORD@host/v1?token=TOKEN", "//host/v1"),
    ("http://alice:PASS@WORD@host:8000/v1", "http://host:8000/v1"),
    ("http://host/v1;jsessionid=TOKEN", "http://host/v1"),
    ("http://host:8000/v1", "http://host:8000/v1"),
    ("https://integrate.api.nvidia.com/v1", "https://integrate.api.nvidia.com/v1"),
    ("localhost:8000/v1?key=TOKEN", "localhost:8000/v1"),
    ("http://host/v1\x1b[2J", "http://host/v1\\x1b[2J"),
])
def test_safe_url_shows_no_user_password_query_or_path_parameters(url, shown):
    assert safe_url(url) == shown


def test_check_endpoint_never_shows_credentials_from_the_url():
    def handle(request):
        if request.url.path.endswith("/models"):
            return httpx2.Response(200, json={"object": "list", "data": [{"id": "m", "object": "model"}]})
        return httpx2.Response(500, json={"error": {"message": f"upstream failed for {request.url}"}})

    client = openai.OpenAI(api_key="sk-endpoint-key", max_retries=0,
                           base_url="http://alice:PASSWORD@fake.test/v1/?token=TOKEN123",
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))
    status = check_endpoint(client, "m")
    assert not status.ok and "HTTP 500" in status.problem
    for text in (str(status), repr(status), status.base_url, status.problem):
        assert "PASSWORD" not in text and "TOKEN123" not in text and "alice" not in text


# ---------------------------------------------------------------- 14: impossible prompt_tokens

class MisreportingServer(ScriptedServer):
    """The scripted server, reporting ``report(true count)`` as prompt_tokens."""

    def __init__(self, script, report):
        super().__init__(script)
        self.report = report

    def handle(self, request):
        response = super().handle(request)
        body = json.loads(response.content)
        body["usage"]["prompt_tokens"] = self.report(body["usage"]["prompt_tokens"])
        return httpx2.Response(200, json=body)


QUESTION = "Question {}: when does the AI club meet, and where exactly on campus is that?"
ANSWER = {"content": "Thursdays at 18:00 in the Harrow building, room 204 [club-ai]. " * 2}


@pytest.mark.parametrize("report", [lambda real: 0, lambda real: real // 10], ids=["zero", "uncached-only"])
def test_an_impossible_prompt_tokens_count_does_not_turn_the_budget_off(report):
    server = MisreportingServer([ANSWER] * 12, report)
    session = ChatSession(max_tokens=400, tools=[], **server.kwargs())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(12):
            session.chat(QUESTION.format(i))
    assert len(session.turn_ids) < 12, "the budget was turned off"
    for sent in server.requests:  # every request fit the budget, as estimated (the tools: none)
        assert sum(map(tokens.approx_tokens, sent["messages"])) + tokens.REPLY_PRIMING <= 400
    said = [w for w in caught if issubclass(w.category, WorkshopWarning) and "prompt_tokens" in str(w.message)]
    assert len(said) == 1  # once per session, not once per request


def test_an_honest_server_is_still_trusted():
    server = MisreportingServer([ANSWER] * 3, lambda real: real)
    session = ChatSession(tools=[], **server.kwargs())
    with warnings.catch_warnings():
        warnings.simplefilter("error", WorkshopWarning)
        for i in range(3):
            session.chat(QUESTION.format(i))
    assert session.ledger.cost(session.messages[:-1])[1] is True  # exact: learnt from the reports


def test_the_ledger_ignores_counts_below_a_quarter_of_the_estimate():
    messages = [{"role": "system", "content": "You are a campus assistant. " * 20},
                {"role": "user", "content": "When does the AI club meet? " * 10}]
    ledger = UsageLedger()
    estimate = ledger.cost(messages)[0]
    with pytest.warns(WorkshopWarning, match="prompt_tokens"):
        assert ledger.record(messages, estimate // 4 - 1) is None
    assert ledger.cost(messages) == (estimate, False) and ledger.records == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", WorkshopWarning)
        assert ledger.record(messages, 0) is None  # warned once already
        entry = ledger.record(messages, -(-estimate // 4))  # a quarter is the lowest believable count
    assert entry.prompt_tokens == -(-estimate // 4) and ledger.cost(messages) == (entry.prompt_tokens, True)


def test_the_ledger_never_believes_fewer_tokens_than_messages():
    ledger = UsageLedger(estimate=lambda message: 0, overhead=0)
    messages = [{"role": "user", "content": "hi"}] * 3
    with pytest.warns(WorkshopWarning):
        assert ledger.record(messages, 2) is None
    assert ledger.record(messages, 3) is not None


# ---------------------------------------------------------------- 15: a .env saved with a BOM

def test_a_dotenv_saved_with_a_bom_keeps_its_first_line(tmp_path, monkeypatch):
    (tmp_path / ".env").write_bytes(f"NVIDIA_API_KEY={NIM_KEY}\n# the key is on the first line\n".encode("utf-8-sig"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORKSHOP_BACKEND", raising=False)
    assert read_dotenv()["NVIDIA_API_KEY"] == NIM_KEY
    settings = load_settings()
    assert settings.backend == "nim" and settings.api_key == NIM_KEY and settings.key_source == ".env file"


def test_wait_until_ready_never_shows_credentials_from_the_url():
    from helpers.llm.endpoint import wait_until_ready

    base = "http://alice:PASSWORD@localhost:8000/v1"
    line = wait_until_ready(base, sleep=lambda s: None, get=lambda url: 200)
    assert line == "READY: http://localhost:8000/v1/health/ready after 0 s"
    with pytest.raises(TimeoutError) as info:
        wait_until_ready(base, timeout=5, interval=5, sleep=lambda s: None, get=lambda url: 503)
    assert "PASSWORD" not in str(info.value) and "alice" not in str(info.value)


def test_a_line_the_terminal_cannot_decode_is_explained_and_the_chat_goes_on(monkeypatch, tmp_path, capsys):
    typed = iter([UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "/quit"])

    def read(prompt):
        item = next(typed)
        if isinstance(item, Exception):
            raise item
        return item

    monkeypatch.setattr("builtins.input", read)
    monkeypatch.delenv("WORKSHOP_BACKEND", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["chat", "--db", str(tmp_path / "chat.db")]) == 0
    out = capsys.readouterr().out
    assert "that line could not be read as text" in out and "Nothing to save yet" in out


def test_a_200_that_echoes_a_password_from_the_base_url_does_not_show_it(monkeypatch, tmp_path):
    from helpers.llm.client import ResponseFormatError

    monkeypatch.chdir(tmp_path)
    settings = load_settings("openai-compatible", base_url="http://alice:PASSWORD1@echo.test/v1")
    echo = httpx2.MockTransport(lambda request: httpx2.Response(
        200, json={"error": {"message": "who is PASSWORD1?"}}))
    client = make_client(settings).with_options(http_client=httpx2.Client(transport=echo))
    with pytest.raises(ResponseFormatError) as info:
        chat([{"role": "user", "content": "hi"}], client=client, settings=settings)
    assert "who is ***?" in str(info.value)
    assert_no_secret(info.value, "PASSWORD1")


def test_url_secrets_names_what_a_server_might_echo():
    from helpers.llm.api_key import hide_secret, url_secrets

    secrets = url_secrets("http://alice:p%40ssword@host/v1?token=T0KEN123")
    assert {"alice", "p%40ssword", "p@ssword", "T0KEN123"} <= set(secrets)
    assert url_secrets("https://ghp_ONLYTOKEN@host/v1") == ["ghp_ONLYTOKEN"]  # a token as the user name
    assert hide_secret("login p@ssword, token T0KEN123", secrets, None) == "login ***, token ***"
