import pytest

from helpers.endpoint import wait_until_ready


def test_waits_until_ready():
    answers = iter([ConnectionError(), 503, 503, 200])
    slept = []

    def get(url):
        assert url == "http://localhost:8000/v1/health/ready"
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    line = wait_until_ready("http://localhost:8000/v1/", interval=5, sleep=slept.append, get=get)
    assert line.startswith("READY") and "15 s" in line and slept == [5, 5, 5]


def test_gives_up_with_an_explanation():
    with pytest.raises(TimeoutError, match="not ready after 10 s .last: HTTP 503"):
        wait_until_ready("http://localhost:8000/v1", timeout=10, interval=5, sleep=lambda s: None,
                         get=lambda url: 503)
