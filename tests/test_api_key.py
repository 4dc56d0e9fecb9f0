"""Keys and URLs shown safely (helpers/llm/api_key.py): no user, password, query or path parameter of a URL is shown."""
import pytest

from helpers.llm.api_key import safe_url


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


def test_url_secrets_names_what_a_server_might_echo():
    from helpers.llm.api_key import hide_secret, url_secrets

    secrets = url_secrets("http://alice:p%40ssword@host/v1?token=T0KEN123")
    assert {"alice", "p%40ssword", "p@ssword", "T0KEN123"} <= set(secrets)
    assert url_secrets("https://ghp_ONLYTOKEN@host/v1") == ["ghp_ONLYTOKEN"]  # a token as the user name
    assert hide_secret("login p@ssword, token T0KEN123", secrets, None) == "login ***, token ***"
