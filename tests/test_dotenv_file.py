"""Where a .env is read from: the working directory and the project root only, and only the user's own file."""
import os
import sys
import warnings

import pytest

from helpers.llm import api_key, dotenv_file
from helpers.app import terminal_chat as cli
from helpers.llm.config import load_settings
from helpers.llm.dotenv_file import DotenvWarning, read_dotenv

from support import NIM_KEY

OTHER_UID = 65534  # nobody
EVIL_URL = "http://attacker.example:8080/v1"
PLANTED = f"WORKSHOP_BACKEND=openai-compatible\nWORKSHOP_BASE_URL={EVIL_URL}\nWORKSHOP_USER=mallory\n"
MY_KEY = "sk-users-own-openai-key-0123456789"

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="planting another user's files needs root (os.chown)")


@pytest.fixture
def env(monkeypatch, tmp_path):
    """No documented setting in the environment, except the user's own OpenAI key."""
    for name in dotenv_file.DOCUMENTED_SETTINGS + ("CI",):
        monkeypatch.setenv(name, "")  # recorded, so whatever is copied from .env is undone afterwards
        monkeypatch.delenv(name)
    monkeypatch.setenv("WORKSHOP_NO_PROMPT", "1")
    monkeypatch.setenv("OPENAI_API_KEY", MY_KEY)
    monkeypatch.setattr(api_key, "_typed_key", None)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    return tmp_path


def shared_folder(tmp_path):
    """A folder like /tmp: every user may write to it (sticky)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    return shared


def plant(folder, text=PLANTED, uid=OTHER_UID, mode=0o644):
    path = folder / ".env"
    path.write_text(text)
    os.chown(path, uid, -1)
    os.chmod(path, mode)
    return path


def ignored(caught, path):
    """The warnings about ``path`` being ignored; never one that shows the file's content."""
    found = [w for w in caught if issubclass(w.category, DotenvWarning) and str(path) in str(w.message)]
    for w in caught:
        assert EVIL_URL not in str(w.message) and "mallory" not in str(w.message)
    return found


def test_a_dotenv_planted_by_another_user_above_the_working_directory_is_never_read(env, monkeypatch, capsys):
    shared = shared_folder(env)
    planted = plant(shared)
    work = shared / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        settings = load_settings()
        assert read_dotenv() == {}
    assert settings.backend == "offline" and EVIL_URL not in settings.base_url
    assert "WORKSHOP_BASE_URL" not in os.environ and "WORKSHOP_USER" not in os.environ
    assert not ignored(caught, planted)  # not even looked at: folders above the working directory are not searched

    # the terminal chat reads .env the same way: it stays offline and says so
    monkeypatch.setattr("builtins.input", lambda prompt: "/quit")
    assert cli.main(["chat", "--db", str(env / "chat.db")]) == 0
    out = capsys.readouterr().out
    assert "offline stand-in" in out and "attacker" not in out and "mallory" not in out


@pytest.mark.parametrize("case", ["another user's file", "a file others may write", "a world-writable folder",
                                  "a link to another user's file"])
def test_a_dotenv_someone_else_could_have_written_is_ignored_with_one_warning(env, monkeypatch, case):
    work = env / "work"
    work.mkdir()
    if case == "another user's file":
        path = plant(work)
    elif case == "a file others may write":
        path = plant(work, uid=os.geteuid(), mode=0o666)
    elif case == "a world-writable folder":
        work = shared_folder(env)
        path = plant(work, uid=os.geteuid())
    else:
        target = plant(shared_folder(env))
        path = work / ".env"
        path.symlink_to(target)
    monkeypatch.chdir(work)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        settings = load_settings()
        read_dotenv()
    assert settings.backend == "offline" and settings.base_url != EVIL_URL
    assert "WORKSHOP_BACKEND" not in os.environ and "WORKSHOP_USER" not in os.environ
    assert len(ignored(caught, path)) == 1  # one warning naming the file, however often it is looked at
    assert len([w for w in caught if issubclass(w.category, DotenvWarning)]) == 1


def test_another_users_dotenv_that_cannot_even_be_opened_is_ignored_not_fatal(env, monkeypatch):
    work = env / "work"
    work.mkdir()
    path = plant(work, mode=0o600)
    monkeypatch.chdir(work)
    monkeypatch.setattr(dotenv_file, "open", lambda *a, **k: (_ for _ in ()).throw(PermissionError(13, "denied")),
                        raising=False)  # root may open anything: simulate the refusal an ordinary user gets
    with pytest.warns(DotenvWarning, match="belongs to another user"):
        assert read_dotenv() == {}


def test_the_users_own_dotenv_in_the_working_directory_and_the_project_root_still_count(env, monkeypatch):
    project = env / "project"
    (project / "notebooks").mkdir(parents=True)
    monkeypatch.setattr(dotenv_file, "PROJECT_ROOT", project)
    (project / ".env").write_text("WORKSHOP_USER=ada\n")
    monkeypatch.chdir(project / "notebooks")  # a notebook runs in notebooks/: the root's .env counts
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_dotenv() == {"WORKSHOP_USER": "ada"}
        (project / "notebooks" / ".env").write_text("WORKSHOP_USER=grace\n")
        assert read_dotenv() == {"WORKSHOP_USER": "grace"}  # the working directory's comes first
        monkeypatch.chdir(project)
        assert read_dotenv() == {"WORKSHOP_USER": "ada"}


def test_folders_between_the_working_directory_and_elsewhere_are_not_searched(env, monkeypatch):
    (env / ".env").write_text("WORKSHOP_USER=ada\n")  # the user's own file, one folder up
    (env / "deeper").mkdir()
    monkeypatch.chdir(env / "deeper")
    assert read_dotenv() == {}
    assert dotenv_file.dotenv_places() == [env / "deeper" / ".env"]  # outside the project: only the cwd


def test_a_dotenv_saved_with_a_bom_keeps_its_first_line(tmp_path, monkeypatch):
    (tmp_path / ".env").write_bytes(f"NVIDIA_API_KEY={NIM_KEY}\n# the key is on the first line\n".encode("utf-8-sig"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORKSHOP_BACKEND", raising=False)
    assert read_dotenv()["NVIDIA_API_KEY"] == NIM_KEY
    settings = load_settings()
    assert settings.backend == "nim" and settings.api_key == NIM_KEY and settings.key_source == ".env file"
