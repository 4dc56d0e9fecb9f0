"""How the stand-in's rules read a request's messages: a message's text, an acknowledgement ("ok thanks"),
and the plain words and stop words the agent rules (``helpers/standin/policy.py``) compare."""
from __future__ import annotations

import re

from helpers.core.tokens import content_text

_WORD = re.compile(r"[a-z0-9]+")
_STOP = set("""a an the is are was were be do does did of to in on at for and or what when where which who
how many much days day until till from now that this those these it its me my i you your we our please
can could would will there their them then than with about tell any some there's is it's meet meets
meeting hours?""".split())


def _text(message: dict) -> str:
    """A message's text, whatever form its content takes."""
    return content_text(message.get("content"))


_ACKS = set("ok okay k thanks thank you thx cool great nice sure yes yep no nope fine got it alright right "
            "perfect awesome cheers".split())  # greetings are not here: rule 4 answers them


def _is_ack(text: str) -> bool:
    """Is the text only an acknowledgement ("ok", "thanks!", "got it") -- or nothing at all?"""
    return set(re.findall(r"[a-z]+", text.lower())) <= _ACKS

