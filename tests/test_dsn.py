"""--db / db=: every DSN form libpq accepts opens PostgreSQL; a DSN is never a file name; passwords never shown."""
import shlex
from pathlib import Path

import pytest

from helpers.app.assistant import open_assistant, open_stores
from helpers.app.terminal_chat import main, resume_command
from helpers.llm.config import load_settings
from helpers.core.dsn import parse_database
from helpers.core.errors import ConfigError
from helpers.sessions.session_store import SessionStoreError

from test_postgres import pg_dsn, scratch_schema

PASSWORD = "PW-s3cret-9"
UNREACHABLE = [  # port 1 on this machine: nothing answers, so connecting fails at once
    f"sslmode=disable host=127.0.0.1 password={PASSWORD} dbname=campus port=1",
    f"dbname = campus   port=1 host='127.0.0.1' password = '{PASSWORD}'",
    f"host=127.0.0.1 port=1 password='{PASSWORD} with spaces' dbname='my campus'",
    f"postgres://ada:{PASSWORD}@127.0.0.1:1/campus",
    f"postgresql://127.0.0.1:1/campus?sslmode=disable&password={PASSWORD}",
]
MALFORMED = [
    f"host=127.0.0.1 password={PASSWORD} junk",             # a piece without '='
    f"host=127.0.0.1 password='{PASSWORD}",                # a quote never closed
    f"campus host=127.0.0.1 password={PASSWORD}",          # a file-like word before the settings
    f"/tmp/campus.db password={PASSWORD}",
    f"hots=127.0.0.1 password={PASSWORD}",                 # a setting libpq does not know
    f"postgresql://ada:{PASSWORD}@[::1/campus",            # an address libpq cannot read
    "sqlite:///campus.db",                                 # a URL of another kind
]


def libpq_reads(dsn):
    psycopg = pytest.importorskip("psycopg")
    return {key: str(value) for key, value in psycopg.conninfo.conninfo_to_dict(dsn).items()}


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("dsn", UNREACHABLE)
def test_every_dsn_form_is_read_as_libpq_reads_it_and_shown_without_its_password(dsn):
    where = parse_database(dsn)
    assert where.is_postgres
    settings = libpq_reads(dsn)
    shown = where.shown()
    assert PASSWORD not in shown and PASSWORD not in where.describe() and PASSWORD not in repr(where)
    # what is shown is the same database: read back by libpq, only the password differs
    back = libpq_reads(shown)
    assert {k: v for k, v in back.items() if k != "password"} == {k: v for k, v in settings.items() if k != "password"}
    assert back.get("password", "***") == "***"
    assert settings["host"] in where.describe() and settings.get("dbname", "") in where.describe()


@pytest.mark.parametrize("dsn", UNREACHABLE)
def test_the_terminal_chat_connects_to_postgresql_for_every_dsn_form_and_creates_no_file(dsn, tmp_path, monkeypatch,
                                                                                         capsys):
    pytest.importorskip("psycopg")
    monkeypatch.chdir(tmp_path)
    assert main(["chat", "--db", dsn]) == 2
    err = capsys.readouterr().err
    assert "could not connect to PostgreSQL" in err and PASSWORD not in err and "Traceback" not in err
    assert files_under(tmp_path) == []  # never a SQLite file named after the DSN


@pytest.mark.parametrize("dsn", UNREACHABLE[:3])
def test_open_assistant_takes_a_key_value_dsn_for_postgresql(dsn, tmp_path, monkeypatch):
    pytest.importorskip("psycopg")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SessionStoreError, match="could not connect to PostgreSQL") as caught:
        open_assistant(load_settings("offline"), "ada", "main", db=dsn)
    assert PASSWORD not in str(caught.value)
    assert files_under(tmp_path) == []


@pytest.mark.parametrize("dsn", MALFORMED)
def test_a_string_that_looks_like_a_dsn_but_is_not_one_is_refused_before_anything_is_opened(dsn, tmp_path,
                                                                                            monkeypatch, capsys):
    pytest.importorskip("psycopg")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        open_stores(dsn)
    message = str(caught.value)
    assert PASSWORD not in message and ("DSN" in message or "PostgreSQL" in message)
    assert main(["chat", "--db", dsn]) == 2
    err = capsys.readouterr().err
    assert PASSWORD not in err and "Traceback" not in err and err.startswith("error: ")
    assert files_under(tmp_path) == []
    if dsn.startswith("/tmp/"):
        assert not Path(dsn).exists() and not Path(dsn.split()[0]).exists()


def test_a_password_in_a_url_that_holds_a_quote_is_hidden_too():
    dsn = "postgresql://ada:pa'ss\"word@127.0.0.1:1/campus"
    assert "pa'ss" not in parse_database(dsn).shown()
    from helpers.core.dsn import redact_dsn
    assert "pa'ss" not in redact_dsn(f'could not connect: "{dsn}"', dsn)


def test_a_plain_path_and_a_path_object_stay_sqlite_files(tmp_path):
    assert parse_database(str(tmp_path / "chat.db")).kind == "sqlite"
    assert parse_database(tmp_path / "host=odd name.db").kind == "sqlite"  # a Path is always a file
    with pytest.raises(ConfigError, match="schema"):
        open_stores(str(tmp_path / "chat.db"), schema="workshop")
    assert files_under(tmp_path) == []


def test_the_resume_line_keeps_every_setting_of_a_dsn_and_hides_its_password():
    dsn = f"sslmode=disable host=db.example password={PASSWORD} dbname=campus"
    line = resume_command("ada", "s1", dsn, "work")
    assert PASSWORD not in line
    argv = shlex.split(line)
    assert argv[argv.index("--schema") + 1] == "work"
    shown = argv[argv.index("--db") + 1]
    assert {k: v for k, v in libpq_reads(shown).items() if k != "password"} == {
        k: v for k, v in libpq_reads(dsn).items() if k != "password"}


def test_a_key_value_dsn_stores_the_chat_in_postgresql_and_memory_says_so(tmp_path, monkeypatch, capsys):
    base = libpq_reads(pg_dsn())
    schema = scratch_schema(tmp_path, "cli_dsn_")
    dsn = " ".join(f"{key}='{value}'" for key, value in reversed(list(base.items())) if key != "password")
    dsn += f" password='{base.get('password', PASSWORD)}' sslmode=disable"
    typed = iter(["When does the AI club meet?", "/memory", "/quit"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(typed))
    monkeypatch.delenv("WORKSHOP_BACKEND", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["chat", "--db", dsn, "--schema", schema, "--user", "ada"]) == 0
    out = capsys.readouterr().out
    assert files_under(tmp_path) == []
    stored_line = next(line for line in out.splitlines() if line.startswith("stored: "))
    assert "PostgreSQL database" in stored_line and base["host"] in stored_line and schema in stored_line
    assert "SQLite" not in out and base.get("password", PASSWORD) not in out
    from helpers.sessions.session_store_pg import PostgresSessionStore
    store = PostgresSessionStore(pg_dsn(), schema=schema)
    try:
        assert [t.question for t in store.load("ada", "main").turns] == ["When does the AI club meet?"]
    finally:
        store.close()
