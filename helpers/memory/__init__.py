"""Short-term memory (notebooks 08-09): what a session keeps when its window forgets old turns.

``summary`` folds dropped turns into a rolling summary (how it names turns and pins facts is in
``summary_format``); ``recall`` says what of a past turn is evidence and how turns rank, and
``recall_index`` embeds and searches them; ``profile`` shows what the user said about themselves
(read from the durable facts of notebook 10), from statements that ``profile_extraction`` finds;
``assembler`` fits all of them and the window under one token budget, with the shares, block
fitters and report in ``budget``. ``convgen`` (its wording in ``convgen_phrases``) generates
conversations on which ``evaluation`` measures the strategies.
"""
