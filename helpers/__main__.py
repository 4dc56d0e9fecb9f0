"""``python -m helpers chat``: the terminal chat (see ``helpers.cli``)."""
from helpers.cli import main

raise SystemExit(main())
