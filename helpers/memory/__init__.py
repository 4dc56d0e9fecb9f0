"""Short-term memory (notebooks 08-09): what a session keeps when its window forgets old turns.

``summary`` folds dropped turns into a rolling summary; ``recall`` brings back older turns by meaning;
``profile`` shows what the user said about themselves (read from the durable facts of notebook 10);
``assembler`` fits all of them and the window under one token budget.
"""
