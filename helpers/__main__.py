"""``python -m helpers chat``: the terminal chat (see ``helpers.app.terminal_chat``)."""
from helpers.app.terminal_chat import main

raise SystemExit(main())
