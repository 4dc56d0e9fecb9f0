"""One escaping rule (helpers.core.text.escape_controls): the terminal chat's ``terminal_text`` and every prompt
line's ``one_line`` escape the same characters, in the same way; only newline and tab differ (a terminal shows
them, a prompt line shows them escaped)."""
import pytest

from helpers.app.terminal_chat import terminal_text
from helpers.core.context_format import one_line, safe_lines
from helpers.core.text import UNSAFE_CHARS, escape_controls

EVERY_BMP_CHARACTER = [chr(code) for code in range(0x10000)]


def test_both_paths_escape_the_same_characters_the_same_way():
    for char in EVERY_BMP_CHARACTER:
        if char in "\n\t":
            continue
        terminal = terminal_text(char) if char != "\r" else terminal_text("x\r")[1:]  # "\r\n" becomes "\n"
        assert terminal == one_line(char) == escape_controls(char), repr(char)


def test_what_is_escaped_is_the_union_both_needed():
    escaped = {char for char in EVERY_BMP_CHARACTER if one_line(char) != char}
    expected = ({chr(c) for c in range(0x20)} | {chr(c) for c in range(0x7f, 0xa0)} | {"\u2028", "\u2029"}
                | {chr(c) for c in range(0x202a, 0x202f)} | {chr(c) for c in range(0x2066, 0x206a)}
                | {chr(c) for c in range(0xd800, 0xe000)})
    assert escaped == expected
    assert {char for char in EVERY_BMP_CHARACTER if terminal_text(char) != char} == expected - {"\n", "\t"}
    assert f"[{UNSAFE_CHARS}]"  # one character class, in one place


@pytest.mark.parametrize("text, terminal, line", [
    ("a\x1b[2Jb", "a\\x1b[2Jb", "a\\x1b[2Jb"),
    ("x\u202ey", "x\\u202ey", "x\\u202ey"),
    ("x\ud800y", "x\\ud800y", "x\\ud800y"),
    ("p\u2028q\x85r", "p\\u2028q\\x85r", "p\\u2028q\\x85r"),
    ("one\ntwo\tthree\rfour", "one\ntwo\tthree\\rfour", "one\\ntwo\\tthree\\rfour"),
    ("plain, ünïcödé 漢字", "plain, ünïcödé 漢字", "plain, ünïcödé 漢字"),
])
def test_examples(text, terminal, line):
    assert terminal_text(text) == terminal and one_line(text) == line
    assert escape_controls(escape_controls(text)) == escape_controls(text)
    assert safe_lines(text).split("\n") == [one_line(part) for part in text.split("\n")]


def test_only_newline_and_tab_can_be_kept():
    assert escape_controls("a\nb\tc", keep="\n") == "a\nb\\tc"
    with pytest.raises(ValueError):
        escape_controls("a\x1bb", keep="\x1b")
