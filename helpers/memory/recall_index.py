"""The recall index (lesson 09): past turns embedded for search by meaning and by words, saved and restored.

Every finished turn is offered to ``RecallIndex.add``, which keeps only evidence
(``helpers.memory.recall``): the user's statements, the assistant's own statements (not a reply that
only cites memory or repeats the user's words), and the final answer of a turn that used a tool.
The assistant's words are searchable and quoted as its own (``[turn 7] assistant: "..."``); they
never reach the profile, which reads the user's words only (``MemoryAssembler.remember``). They
are embedded where the ``embeddings`` setting says (``helpers.retrieval.embedding_backend``: MiniLM
on this machine, hosted NIM, or the chat server's ``/v1/embeddings``; the offline stand-in runs the
local MiniLM model there) -- lazily, in one batch, the first time a search needs it. Each side of a
turn is a whole message (with the speaker's ``name``, and the text parts of mixed content) and, when it
is long, each of its longer sentences on its own, without a leading ``Name: `` (``side_pieces``); a
side scores as its best piece, so one fact in a long message is still found, and a speaker's name
cannot make a short greeting match every question about that speaker. A question that names one of the
speakers (a message's ``name``, or a ``Name: `` that starts its words) ranks that speaker's lines first: every
other named speaker's lines score ``SPEAKER_FACTOR`` of theirs (``_Lexical.by_named_speaker``), and the name
itself is left out of the words searched by, since it starts every line they said. A message split into sentences
is embedded sentence by sentence only: its whole-message vector is their mean (``_catch_up``).

``search(question, exclude=ids, k=...)`` returns up to k past turns not in ``exclude`` (``MemoryAssembler`` passes
the window turns its own share sends). Each
side of a turn is a line ranked twice -- by meaning (``rank``: best piece plus recency, at least
``min_score``) and by words (BM25 over the quoted lines' ``helpers.core.words.terms``: stop words left
out, word forms folded, ``_Lexical``, in Python for now) -- and the two rankings are fused by reciprocal
rank (``RRF_K``, ``LEXICAL_WEIGHT``; a line that shares a word with the question may score up to
``LEXICAL_SLACK`` below ``min_score``). A line said the same day beside a match, up to two lines away,
gains part of its score (``CONTEXT_WEIGHTS``): the question a statement answers, or what was said next
about it, comes with it. Three rules read when things were said and what the question is near: the question's
vector first takes a step toward its best matches (``FEEDBACK_WEIGHT``), a day that matched several times lifts
its lines (``by_day``), and a question that names a day or a month ranks what was said then first
(``by_named_time``). A turn is quoted by the
sides that matched; a tool answer (scoring ``ANSWER_PENALTY`` lower, so long replies do not crowd
statements out) with the whole turn. ``MemoryAssembler`` asks for as many turns as the recall block's
share of the budget can hold, and ``fit_recall`` takes them until it is full. Restatements merge
into their newest occurrence; each line is compared with at most ``MERGE_PEERS`` groups, found by
its rarest words, so a search's work is linear in the index (``comparisons``, ``last_scored``).

Stored vectors can be kept beside the turns (``export_vectors`` / ``import_vectors``, with the
embedding model's name) so a restored session does not embed its whole history again. Rows are only
ever appended, so the ones embedded since the last save are the tail of the matrix: ``export_vectors(
unsaved=True)`` hands over only those, and ``vectors_saved`` moves the line once they are stored.

What the index keeps of one turn (``turn_state``: its quote and pieces, or that it was skipped) is set
by ``add`` and removed by ``discard``, and nothing else changes it, so a store can keep it beside the
turn. ``checkpoint``/``rollback`` take a failed turn back without copying the history (the per-turn
entries are shared, never changed in place) and keep every vector still valid. If
embedding fails, ``search`` returns nothing with a one-line ``RecallWarning``; the turns stay
queued and are embedded on a later search. Raw turns are never discarded.
"""
from __future__ import annotations

import warnings
from typing import Any, Collection, Mapping, Sequence

import numpy as np

from helpers.retrieval import embeddings  # the module: embeddings.embed_texts is looked up at each call
from helpers.llm.client import get_client, get_settings
from helpers.retrieval.embedding_backend import embedding_client
from helpers.core.errors import ConfigError, WorkshopWarning
from helpers.core.words import terms
from helpers.core.clock import MONTH_PATTERN, WEEKDAYS, month_number, now
from helpers.core.context_format import QuoteLine, read_quote_lines, read_turn_day
import math
import re
from datetime import date, timedelta

from helpers.memory import recall as _recall  # near_identical looked up at each call (tests count the calls)
from helpers.memory.recall import (Recalled, assistant_statements, clip, is_substantive, quote_turn, rank,
                                   side_pieces, speaker_names, statements, turn_parts)

DEFAULT_K = 3
DEFAULT_MIN_SCORE = 0.30  # the knowledge base uses the same threshold for this model
ANSWER_PENALTY = 0.05  # a tool answer piece scores this much lower than a user statement
ANSWER_LEXICAL = 0.5  # ... and its BM25 score is multiplied by this
MERGE_POOL = 16  # repeats are looked for among the best k x this many turns
EMBED_CHARS = 1000  # MiniLM reads 256 tokens; longer pieces are cut here, before embedding, not by the model
MAX_PIECES = 12  # sentences embedded per turn (a huge message is not embedded sentence by sentence forever)
MAX_K = 200  # at most this many turns are handed over by one search, whatever the budget
# Fusion (reciprocal-rank, chosen on LoCoMo's tuning half): a line scores 1/(RRF_K + its rank by meaning)
# + LEXICAL_WEIGHT/(RRF_K + its rank by BM25); a line that shares a word the question names may score
# LEXICAL_SLACK below min_score and still be found. On the tuning half, RRF_K=5 with LEXICAL_WEIGHT=1.6
# found 1.4-1.7 points more of the evidence at 900 tokens than 10 and 1.3 (word matches are the sharper signal
# on conversations, and the first few ranks of each list matter most).
RRF_K = 5
LEXICAL_WEIGHT = 1.6
LEXICAL_SLACK = 0.15
BM25_K1, BM25_B = 1.2, 0.4
# A line beside a match is likely part of the same exchange (the question a statement answers, the next
# thing said about it): a line gains CONTEXT_WEIGHTS[d-1] x the best fused score of the lines d away from it
# (d = 1, 2: the other side of its turn, the sides of the turns around it) when they were said the same day.
# Chosen on LoCoMo's tuning half.
CONTEXT_WEIGHTS = (0.4, 0.4)
# A question that names one of the conversation's speakers asks about what that speaker said (on LoCoMo's
# tuning half, 96% of the evidence of such a question is the named speaker's): the lines of every other named
# speaker score SPEAKER_FACTOR of their fused score. Lines that name no speaker are left as they are. The
# speaker's name is then no word to search by (it starts every line they said: ``_Lexical.search_words``).
SPEAKER_FACTOR = 0.5
# Pseudo-relevance feedback: the question's vector moves FEEDBACK_WEIGHT of the way toward the mean of the
# FEEDBACK_ROWS pieces most like it (at least min_score, outside the window) before lines are ranked by meaning,
# so a question worded unlike the conversation ("What fields would she pursue?") still reaches the lines beside
# its best match ("counselling", "mental health"). Chosen on LoCoMo's tuning half.
FEEDBACK_WEIGHT = 0.3
FEEDBACK_ROWS = 3
# The day a match was said: a conversation returns to one subject on one day, so a line gains DAY_WEIGHT x
# its day's strength (the mean of the day's DAY_LINES best fused scores before context, over the best day's),
# multiplied into its own score (a line that matched nothing, nor sits beside a match, gains nothing). ``by_day``.
DAY_WEIGHT = 0.6
DAY_LINES = 3
# A question that names a time ("in June", "on 3 May 2023", "in August 2023", "yesterday", "last week") asks
# about what was said then:
# lines said in that period, or up to TIME_SLACK_DAYS after it (people tell of a day afterwards), score
# 1 + TIME_WEIGHT times theirs. ``named_period``.
TIME_WEIGHT = 1.0
TIME_SLACK_DAYS = 7
MIN_SPEAKER_LINES = 2  # a name is a speaker's once it starts at least this many lines (not one "Note: ...")
JOIN_SHARE = 0.5  # a turn's other side is quoted with it when it scores at least this share of the turn's best line
MERGE_PEERS = 4  # a line is compared with at most this many earlier groups (found by its rarest words)
MERGE_KEYS = 4  # ... the groups that hold one of its this many rarest words
USER, ASSISTANT = 0, 1  # the two sides of a turn, ranked as lines of their own


class RecallWarning(WorkshopWarning):
    """Recall could not run this time (for example the embedding request failed)."""


class RecallIndex:
    """Past turns, embedded for search by meaning; only substantive turns are embedded."""

    def __init__(self, *, client: Any = None, settings: Any = None, model: str | None = None,
                 k: int = DEFAULT_K, min_score: float = DEFAULT_MIN_SCORE, max_chars: int = 600):
        if not isinstance(k, int) or k < 1:
            raise ConfigError(f"k must be a positive whole number (got {k!r})")
        self.client, self.settings, self.model = client, settings, model
        self.k, self.min_score, self.max_chars = k, min_score, max_chars
        self.quotes: dict[int, str] = {}  # turn id -> quoted text (what a search returns)
        self.texts: dict[int, list[str]] = {}  # turn id -> the pieces that are embedded
        self.answers: dict[int, int] = {}  # turn id -> how many of its last pieces are a tool answer
        self.assistant: dict[int, int] = {}  # turn id -> how many pieces (before a tool answer's) the assistant said
        self.skipped: list[int] = []  # turns filtered out as small talk
        self._ids: list[int] = []  # turn id of each row of _matrix
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._is_answer = np.zeros(0, dtype=bool)  # per row: a tool answer (True) or a user statement
        self._side = np.zeros(0, dtype=np.int64)  # per row: USER or ASSISTANT (a tool answer is the assistant's)
        self._lexical: _Lexical | None = None  # BM25 over the quoted lines, built when a search needs it
        self.comparisons = 0  # near-identical comparisons made by merging (the last search's)
        self._saved_rows = 0  # the leading rows of _matrix a store holds (see vectors_saved)
        self._query: tuple[str, np.ndarray] | None = None  # the latest question and its vector
        self._said_best: set[int] = set()  # in the latest search, turns whose best piece was a statement
        self._other: dict[str, np.ndarray] = {}  # vectors of texts ranked by ``similarity`` (profile lines)
        self.embed_requests = 0
        self.last_scored = 0  # lines scored by the last search (dense and lexical: linear in the index)

    def attach(self, client: Any = None, settings: Any = None) -> None:
        """Use this client/settings unless others were given explicitly."""
        self.client = self.client if self.client is not None else client
        self.settings = self.settings if self.settings is not None else settings

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def pending(self) -> list[int]:
        """Turn ids stored but not embedded yet."""
        done = set(self._ids)
        return [i for i in self.texts if i not in done]

    def add(self, turn_id: int, messages: Sequence[dict], at: Any = None) -> bool:
        """Remember one finished turn; returns False when it was small talk (not stored).

        Both sides are evidence: the user's statements, and the assistant's -- its own words (statements
        that do not merely cite an earlier turn), or a tool answer. Each side is embedded as its whole
        message and its longer sentences (``side_pieces``). ``at`` (a datetime or ISO 8601 text) is when the
        turn was said: its quote's lines are dated with its day (``[turn 7, 2023-05-08] ...``)."""
        user, answer, tools = turn_parts(messages)
        user_name, answer_name = speaker_names(messages)
        said = side_pieces(statements(user), user_name, MAX_PIECES - 1) if is_substantive(user) else []
        answers = [answer] if answer and tools else []
        replied = [] if tools or not is_substantive(answer) else \
            side_pieces(assistant_statements(answer, user), answer_name, MAX_PIECES - 1 - len(said))
        if not (said or replied or (answers and is_substantive(user))):
            self.skipped.append(turn_id)
            return False
        self.quotes[turn_id] = quote_turn(turn_id, messages, self.max_chars, at=at)
        pieces = said + replied + answers
        self.texts[turn_id] = [clip(piece, EMBED_CHARS) for piece in pieces]
        self.answers[turn_id] = len(answers)
        if replied:
            self.assistant[turn_id] = len(replied)
        if self._lexical is not None:
            self._lexical.add(turn_id, self.quotes[turn_id])
        return True

    def discard(self, turn_id: int) -> None:
        """Forget a turn (after an undo)."""
        self.quotes.pop(turn_id, None)
        self.texts.pop(turn_id, None)
        self.answers.pop(turn_id, None)
        self.assistant.pop(turn_id, None)
        self._lexical = None
        if turn_id in self.skipped:
            self.skipped = [i for i in self.skipped if i != turn_id]
        if turn_id in self._ids:
            self._keep_rows(np.asarray(self._ids) != turn_id)

    def _keep_rows(self, keep: np.ndarray) -> None:
        """Keep only the matrix rows where ``keep`` is True (the saved line moves with the rows it passes)."""
        self._saved_rows = int(keep[:self._saved_rows].sum())
        self._ids = [i for i, k in zip(self._ids, keep.tolist()) if k]
        self._matrix = self._matrix[keep] if len(self._ids) else np.zeros((0, 0), dtype=np.float32)
        self._is_answer = self._is_answer[keep]
        self._side = self._side[keep]

    # -- what it keeps of one turn, and taking a failed turn back
    def turn_state(self, turn_id: int) -> dict | None:
        """What the index keeps of one turn (JSON-ready), or None: set by ``add``, removed by ``discard``."""
        return _part(self.checkpoint(), turn_id)

    @staticmethod
    def parts_at(point: tuple) -> dict[int, dict]:
        """Every turn's part (``turn_state``) as the index held them at ``checkpoint``."""
        texts, skipped = point[1], point[3]
        return {turn_id: _part(point, turn_id) for turn_id in [*skipped, *texts]}

    def checkpoint(self) -> tuple:
        """Where the index stands now, for ``rollback`` (shallow copies: entries are never changed in place)."""
        return dict(self.quotes), dict(self.texts), dict(self.answers), list(self.skipped), dict(self.assistant)

    def rollback(self, point: tuple) -> None:
        """Back to ``checkpoint``; vectors of turns still indexed with the same pieces are kept."""
        quotes, texts, answers, skipped, assistant = point
        self.quotes, self.texts, self.answers, self.skipped = dict(quotes), dict(texts), dict(answers), list(skipped)
        self.assistant, self._lexical = dict(assistant), None
        if self._ids:
            self._keep_rows(np.array([i in texts for i in self._ids], dtype=bool))

    def embedding_model(self) -> str:
        """The name of the embedding model this index embeds with."""
        return self.model or (self.settings or get_settings()).embedding_model

    def export_vectors(self, *, unsaved: bool = False) -> tuple[str, dict[int, np.ndarray]]:
        """(model name, turn id -> its pieces' vectors, float32 rows): to store beside the turns.

        ``unsaved=True``: only the rows added since the line ``vectors_saved`` last moved (the tail)."""
        start = self._saved_rows if unsaved else 0
        rows: dict[int, list[int]] = {}
        for row, turn_id in enumerate(self._ids[start:], start):
            rows.setdefault(turn_id, []).append(row)
        return self.embedding_model(), {i: self._matrix[r].astype(np.float32) for i, r in rows.items()}

    @property
    def rows(self) -> int:
        """How many vectors the index holds (one per embedded piece)."""
        return len(self._ids)

    def vectors_saved(self, rows: int) -> None:
        """The first ``rows`` vectors (``rows`` read before the save that wrote them) are now stored."""
        self._saved_rows = max(self._saved_rows, min(rows, len(self._ids)))

    def import_vectors(self, model: str, vectors: Mapping[int, np.ndarray]) -> int:
        """Use stored vectors instead of embedding again; only from the same model and for the same pieces.

        Returns how many turns were taken; the others stay pending and are embedded at the next search.
        """
        if model != self.embedding_model():
            return 0
        done = set(self._ids)
        taken = [(i, np.asarray(v, dtype=np.float32)) for i, v in vectors.items()
                 if i in self.texts and i not in done and np.ndim(v) == 2 and len(v) == len(self.texts[i])]
        if taken and self._ids and taken[0][1].shape[1] != self._matrix.shape[1]:
            return 0
        if not taken:
            return 0
        stored = self._saved_rows == len(self._ids)  # nothing unsaved before them: they extend the saved part
        self._add_rows([i for i, _ in taken], np.vstack([m for _, m in taken]))
        if stored:
            self._saved_rows = len(self._ids)
        return len(taken)

    def _embed(self, texts: list[str], input_type: str) -> np.ndarray:
        settings = self.settings or get_settings()
        model = self.embedding_model()
        self.embed_requests += 1
        if getattr(settings, "embeddings", "server") == "local":  # WORKSHOP_EMBEDDINGS: MiniLM on this machine
            return embeddings.local_embed(texts)
        client = embedding_client(settings, self.client if self.client is not None else get_client(quiet=True))
        return embeddings.embed_texts(client, texts, model=model, input_type=input_type, progress=False)

    def _add_rows(self, turn_ids: list[int], vectors: np.ndarray) -> None:
        """Append the vectors of these turns' pieces (in order), marking which rows are tool answers."""
        kinds = [n >= len(self.texts[i]) - self.answers.get(i, 0) for i in turn_ids
                 for n in range(len(self.texts[i]))]
        sides = [USER if n < len(self.texts[i]) - self.answers.get(i, 0) - self.assistant.get(i, 0) else ASSISTANT
                 for i in turn_ids for n in range(len(self.texts[i]))]
        self._matrix = vectors if not self._ids else np.vstack([self._matrix, vectors])
        self._ids += [i for i in turn_ids for _ in self.texts[i]]
        self._is_answer = np.concatenate([self._is_answer, np.array(kinds, dtype=bool)])
        self._side = np.concatenate([self._side, np.array(sides, dtype=np.int64)])

    def _wholes(self, turn_id: int) -> list[tuple[int, int]]:
        """(whole, end) for each side of a turn that ``side_pieces`` split: its piece ``whole`` is the whole
        message, and pieces ``whole + 1`` to ``end - 1`` are its sentences. Sides run in ``texts`` order: the
        user's pieces, the assistant's own words, a tool answer (one piece, never split)."""
        count = len(self.texts[turn_id])
        user = count - self.answers.get(turn_id, 0) - self.assistant.get(turn_id, 0)
        sides = [(0, user), (user, user + self.assistant.get(turn_id, 0))]
        return [(start, end) for start, end in sides if end - start > 1]

    def _catch_up(self) -> None:
        """Embed the pending turns' pieces, in one batch. A split side's whole message is not embedded again:
        its vector is the mean of its sentences' (``mean_rows``), which ranks almost as the whole does (LoCoMo's
        tuning half: evidence recall within a point at every budget) for 7-10% fewer tokens to embed."""
        pending = self.pending
        if not pending:
            return
        wholes = {i: self._wholes(i) for i in pending}
        embedded = {i: [n for n in range(len(self.texts[i])) if all(n != w for w, _ in wholes[i])] for i in pending}
        vectors = self._embed([self.texts[i][n] for i in pending for n in embedded[i]], "passage")
        rows, at = [], 0
        for i in pending:
            turn = np.zeros((len(self.texts[i]), vectors.shape[1]), dtype=np.float32)
            turn[embedded[i]] = vectors[at:at + len(embedded[i])]
            at += len(embedded[i])
            for whole, end in wholes[i]:
                turn[whole] = mean_rows(turn[whole + 1:end])
            rows.append(turn)
        self._add_rows(pending, np.vstack(rows))

    def _query_vector(self, question: str) -> np.ndarray:
        text = clip(" ".join(question.split()), EMBED_CHARS)
        if self._query is None or self._query[0] != text:
            self._query = (text, self._embed([text], "query")[0])
        return self._query[1]

    def similarity(self, question: str, texts: Sequence[str]) -> list[float] | None:
        """Similarity of each text to ``question`` (texts embedded once and kept); None if embedding fails."""
        if not texts or not is_substantive(question):
            return None
        try:
            query = self._query_vector(question)
            new = list(dict.fromkeys(t for t in texts if t not in self._other))
            if new:
                if len(self._other) > 4096:
                    self._other.clear()
                self._other.update(zip(new, self._embed([clip(t, EMBED_CHARS) for t in new], "passage")))
        except embeddings.EmbeddingError:
            return None
        return [float(self._other[t] @ query) for t in texts]

    def search(self, question: str, *, exclude: Sequence[int] = (), k: int | None = None) -> list[Recalled]:
        """Up to ``k`` past turns that match ``question``, not in ``exclude``, best first.

        Each side of a turn (the user's line, the assistant's) is ranked as a line of its own, by meaning
        (its best piece, ``rank``: similarity plus recency) and by words (BM25 over the quoted lines), and
        the two rankings are fused (reciprocal rank: ``RRF_K``, ``LEXICAL_WEIGHT``). A turn is quoted by the
        sides that ranked before the next turn was needed; a tool's answer with the whole turn (the question,
        the tools, the answer). Scoring is linear in the index; merging repeats compares each line with at
        most ``MERGE_PEERS`` groups (``comparisons``)."""
        k = self.k if k is None else k
        excluded = set(exclude)
        self.comparisons = self.last_scored = 0
        if not is_substantive(question) or not any(i not in excluded for i in self.texts):
            return []
        try:
            self._catch_up()
            query = self._query_vector(question)
        except embeddings.EmbeddingError as exc:
            first_line = str(exc).splitlines()[0]
            warnings.warn(f"recall skipped this turn: {first_line}", RecallWarning, stacklevel=2)
            return []
        similarity = self._matrix @ query - ANSWER_PENALTY * self._is_answer
        if FEEDBACK_WEIGHT:
            query = self._with_feedback(query, similarity, excluded)
            similarity = self._matrix @ query - ANSWER_PENALTY * self._is_answer
        codes = np.asarray(self._ids, dtype=np.int64) * 2 + self._side  # each row's line: turn x 2 + side
        lines, row_line = np.unique(codes, return_inverse=True)
        best = np.full(len(lines), -np.inf)
        np.maximum.at(best, row_line, similarity)  # a line scores as its best piece
        dense = dict(zip(lines.tolist(), best.tolist()))
        words = self._lexical_index()
        lexical = words.scores(words.search_words(question))
        for code in [c for c in lexical if c % 2 == ASSISTANT and self.answers.get(c // 2)]:
            lexical[code] *= ANSWER_LEXICAL  # a tool's answer ranks lower by words too (long replies repeat words)
        self.last_scored = len(self._ids) + words.postings_read
        floor = self.min_score - LEXICAL_SLACK

        def wanted(code: int) -> bool:
            turn_id = code // 2
            return turn_id not in excluded and turn_id in self.quotes and (
                dense[code] >= self.min_score or (lexical.get(code, 0.0) > 0 and dense[code] >= floor))

        by_meaning = [code for code, _ in rank(dense) if wanted(code)]
        by_words = sorted((c for c in lexical if c in dense and wanted(c)), key=lambda c: (-lexical[c], -c))
        fused = {code: 1.0 / (RRF_K + n) for n, code in enumerate(by_meaning, 1)}
        for n, code in enumerate(by_words, 1):
            fused[code] += LEXICAL_WEIGHT / (RRF_K + n)
        fused = rerank(question, fused, words, excluded)
        order = sorted(fused, key=lambda c: (-round(fused[c], 9), -c))
        return self._merged([(code, fused[code]) for code in order], k)

    def _with_feedback(self, query: np.ndarray, similarity: np.ndarray, excluded: set[int]) -> np.ndarray:
        """The question's vector moved ``FEEDBACK_WEIGHT`` toward the mean of the ``FEEDBACK_ROWS`` pieces most like
        it (at least ``min_score``, never a turn in ``excluded``); unchanged when no piece is that close."""
        allowed = similarity >= self.min_score
        if excluded:
            allowed &= ~np.isin(np.asarray(self._ids, dtype=np.int64), list(excluded))
        rows = np.flatnonzero(allowed)
        if not len(rows):
            return query
        best = rows[np.argsort(-similarity[rows], kind="stable")[:FEEDBACK_ROWS]]
        moved = (1 - FEEDBACK_WEIGHT) * query + FEEDBACK_WEIGHT * mean_rows(self._matrix[best])
        return moved / max(float(np.linalg.norm(moved)), 1e-12)

    def _lexical_index(self) -> "_Lexical":
        if self._lexical is None:
            self._lexical = _Lexical()
            for turn_id, quote in self.quotes.items():
                self._lexical.add(turn_id, quote)
        return self._lexical

    def _merged(self, ranked: list[tuple[int, float]], k: int) -> list[Recalled]:
        """Up to ``k`` turns from ranked lines, merging near-identical statements into their newest occurrence.

        A line of a turn already chosen adds its side to that turn's quote when it scores at least
        ``JOIN_SHARE`` of the turn's best line (a weak other side is not worth its tokens); a line that restates an earlier
        group's first line (``near_identical``) joins that group; any other line starts a turn of its own
        until there are ``k``."""
        lexical = self._lexical_index()
        groups: list[dict] = []
        of_turn: dict[int, dict] = {}  # turn id -> its group
        by_word: dict[str, list[dict]] = {}  # word -> groups whose first line holds it
        for code, score in ranked:
            turn_id, side = divmod(code, 2)
            if turn_id in of_turn:
                if score >= JOIN_SHARE * of_turn[turn_id]["score"]:  # a weak other side is not worth its tokens
                    of_turn[turn_id]["sides"].setdefault(turn_id, set()).add(side)
                continue
            text = lexical.text(code)
            keys = lexical.rarest(code, MERGE_KEYS)
            peers: dict[int, tuple[int, dict]] = {}
            for word in keys:
                for group in by_word.get(word, ()):
                    shared, _ = peers.get(id(group), (0, group))
                    peers[id(group)] = (shared + 1, group)
            found = None
            for _, group in sorted(peers.values(), key=lambda p: -p[0])[:MERGE_PEERS]:
                self.comparisons += 1
                if group["side"] == side and _recall.near_identical(text, group["text"]):
                    found = group
                    break
            if found is not None:
                found["ids"].append(turn_id)
                found["sides"].setdefault(turn_id, set()).add(side)
                of_turn[turn_id] = found
                continue
            if len(groups) >= k:
                break
            group = {"ids": [turn_id], "score": score, "text": text, "side": side, "sides": {turn_id: {side}}}
            groups.append(group)
            of_turn[turn_id] = group
            for word in lexical.words(code):
                by_word.setdefault(word, []).append(group)
        return [self._recalled(group) for group in groups]

    def _recalled(self, group: dict) -> Recalled:
        ids = sorted(group["ids"])
        newest = ids[-1]
        text = self._quote_sides(newest, group["sides"][newest])
        if len(ids) > 1:
            turns = ", ".join(map(str, ids))
            text = text.replace("\n", f" (said {len(ids)} times: turns {turns})\n", 1) if "\n" in text \
                else text + f" (said {len(ids)} times: turns {turns})"
        return Recalled(newest, round(group["score"], 6), text, tuple(ids[:-1]))

    def _quote_sides(self, turn_id: int, sides: set[int]) -> str:
        """The quote lines of the sides a search matched: the user's line, the assistant's; a tool's answer
        comes with the whole turn (what was asked, the tools, the answer)."""
        lines = self.quotes[turn_id].split("\n")
        if ASSISTANT in sides and self.answers.get(turn_id):
            return "\n".join(lines)
        keep = [line for n, line in enumerate(lines)
                if (USER in sides and n == 0) or (ASSISTANT in sides and n > 0 and _is_assistant_line(line))]
        return "\n".join(keep or lines[:1])

    def state(self) -> dict:
        """JSON-ready state (texts only: vectors are recomputed after a restore unless imported)."""
        return {"quotes": {str(i): q for i, q in self.quotes.items()},
                "texts": {str(i): t for i, t in self.texts.items()}, "skipped": list(self.skipped),
                "answers": {str(i): n for i, n in self.answers.items() if n},
                "assistant": {str(i): n for i, n in self.assistant.items() if n}}

    def restore(self, state: dict | None) -> None:
        """Counterpart of ``state``."""
        state = state or {}
        self.quotes = {int(i): q for i, q in state.get("quotes", {}).items()}
        self.texts = {int(i): list(t) for i, t in state.get("texts", {}).items()}
        self.skipped = [int(i) for i in state.get("skipped", [])]
        self.answers = {int(i): int(n) for i, n in state.get("answers", {}).items()}
        self.assistant = {int(i): int(n) for i, n in state.get("assistant", {}).items()}
        self._ids, self._matrix = [], np.zeros((0, 0), dtype=np.float32)
        self._is_answer = np.zeros(0, dtype=bool)
        self._side = np.zeros(0, dtype=np.int64)
        self._lexical = None
        self._saved_rows = 0


def mean_rows(rows: np.ndarray) -> np.ndarray:
    """The unit vector along the mean of some unit rows (a message's vector from its sentences')."""
    mean = rows.mean(axis=0)
    return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)


def rerank(question: str, fused: dict[int, float], lexical: "_Lexical",
           excluded: Collection[int] = ()) -> dict[int, float]:
    """The rules that read more than one line, applied to fused scores (line code -> score) in order: context
    (``with_context``), the day (``by_day``), a named time (``by_named_time``), a named speaker
    (``_Lexical.by_named_speaker``). ``lexical`` knows every line's day and speaker; the session store's search
    (``helpers.sessions.recall_search``) builds one over the turns it found and their neighbours."""
    matched = fused
    fused = with_context(fused, lexical, excluded)
    fused = by_day(fused, lexical.days, matched)  # a day's strength is its own matches, not their context
    fused = by_named_time(question, fused, lexical.days)
    return lexical.by_named_speaker(question, fused)


def with_context(fused: dict[int, float], lexical: "_Lexical", excluded: Collection[int] = ()) -> dict[int, float]:
    """Each line's fused score plus, for each distance d, ``CONTEXT_WEIGHTS[d-1]`` x the better fused score of
    the two lines d away said the same day (the day of each quote's tag; a turn without a time is no one's
    context); a known line beside a match may enter on that alone (never one in ``excluded``)."""
    known, days = lexical.length, lexical.days  # every side of every quoted turn; dated turns' days
    best: dict[tuple[int, int], float] = {}  # (line, distance) -> the better score of the lines that far
    for source, score in fused.items():
        day = days.get(source // 2)
        if day is None:
            continue
        for d in range(1, len(CONTEXT_WEIGHTS) + 1):
            for code in (source - d, source + d):
                if code in known and code // 2 not in excluded and days.get(code // 2) == day \
                        and score > best.get((code, d), 0.0):
                    best[(code, d)] = score
    out = dict(fused)
    for (code, d), score in best.items():
        out[code] = out.get(code, 0.0) + CONTEXT_WEIGHTS[d - 1] * score
    return out


def by_day(scores: dict[int, float], days: Mapping[int, str],
           matched: Mapping[int, float] | None = None) -> dict[int, float]:
    """Each dated line's score times 1 + ``DAY_WEIGHT`` x its day's strength: the mean of the day's ``DAY_LINES``
    best ``matched`` scores (the lines' own matches, before context; ``scores`` when not given), over the
    strongest day's. Lines of undated turns are left as they are."""
    if not DAY_WEIGHT:
        return scores
    per_day: dict[str, list[float]] = {}
    for code, score in (scores if matched is None else matched).items():
        day = days.get(code // 2)
        if day is not None:
            per_day.setdefault(day, []).append(score)
    strength = {day: sum(sorted(values, reverse=True)[:DAY_LINES]) / DAY_LINES for day, values in per_day.items()}
    top = max(strength.values(), default=0.0)
    if top <= 0:
        return scores
    return {code: score * (1 + DAY_WEIGHT * strength.get(days[code // 2], 0.0) / top) if code // 2 in days else score
            for code, score in scores.items()}


_MONTH = MONTH_PATTERN
_DAY_NUMBER = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+((?:19|20)\d\d))?"
_DAY_MONTH = re.compile(r"\b" + _DAY_NUMBER + r"(?:\s+of)?\s+" + _MONTH + r"\b" + _YEAR, re.I)
_MONTH_DAY = re.compile(r"\b" + _MONTH + r"\s+" + _DAY_NUMBER + r"\b" + _YEAR, re.I)
_MONTH_ONLY = re.compile(r"\b(?:(?:in|during|of|since)\s+|(?:early|late|mid)(?:-|\s+))" + _MONTH + r"\b" + _YEAR + r"|\b"
                         + _MONTH + r"\s+((?:19|20)\d\d)\b", re.I)
_ISO_DAY = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")


def named_period(question: str) -> tuple[tuple[int | None, int, int, int], ...]:
    """The periods ``question`` names, as (year or None, month, first day, last day): a day ("on 3 May 2023",
    "May 3rd", "2023-05-03") or a month ("in June", "August 2023"). A year on its own names no period."""
    found: list[tuple[int | None, int, int, int]] = []
    taken: list[tuple[int, int]] = []

    def keep(span: tuple[int, int], year: str | None, month: int, first: int, last: int) -> None:
        if any(a < span[1] and span[0] < b for a, b in taken) or not 1 <= first <= last <= 31:
            return
        taken.append(span)
        found.append((int(year) if year else None, month, first, last))

    for match in _ISO_DAY.finditer(question):
        if 1 <= int(match.group(2)) <= 12:
            keep(match.span(), match.group(1), int(match.group(2)), int(match.group(3)), int(match.group(3)))
    for match in _DAY_MONTH.finditer(question):
        keep(match.span(), match.group(3), month_number(match.group(2)), int(match.group(1)), int(match.group(1)))
    for match in _MONTH_DAY.finditer(question):
        keep(match.span(), match.group(3), month_number(match.group(1)), int(match.group(2)), int(match.group(2)))
    for match in _MONTH_ONLY.finditer(question):
        month, year = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        keep(match.span(), year, month_number(month), 1, 31)
    return tuple(found)


_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}
_COUNT = r"(\d{1,3}|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")"
_AGO = re.compile(r"\b" + _COUNT + r"\s+(day|week)s?\s+ago\b", re.I)
_LAST = re.compile(r"\blast\s+(week|month|" + "|".join(WEEKDAYS) + r")\b", re.I)
_YESTERDAY = re.compile(r"\b(?:the\s+day\s+before\s+)?yesterday\b", re.I)
_EARLIER_TODAY = re.compile(r"\b(?:earlier\s+today|this\s+morning)\b", re.I)


def relative_period(question: str, today: date) -> tuple[tuple[date, date], ...]:
    """The past periods ``question`` names relative to ``today``, as (first day, last day): "yesterday", "the day
    before yesterday", "3 days ago", "a week ago" (give or take 3 days), "last week" (Monday to Sunday), "last
    month", "last Friday" (the latest Friday before today), "earlier today", "this morning"."""
    found: list[tuple[date, date]] = []
    for match in _YESTERDAY.finditer(question):
        back = 2 if match.group(0).lower().startswith("the") else 1
        found.append((today - timedelta(days=back),) * 2)
    for match in _AGO.finditer(question):
        count = match.group(1).lower()
        n = int(count) if count.isdigit() else _NUMBER_WORDS[" ".join(count.split())]
        if match.group(2).lower() == "day":
            found.append((today - timedelta(days=n),) * 2)
        else:
            middle = today - timedelta(weeks=n)
            found.append((middle - timedelta(days=3), middle + timedelta(days=3)))
    for match in _LAST.finditer(question):
        what = match.group(1).lower()
        if what == "week":
            monday = today - timedelta(days=today.weekday() + 7)
            found.append((monday, monday + timedelta(days=6)))
        elif what == "month":
            last = today.replace(day=1) - timedelta(days=1)
            found.append((last.replace(day=1), last))
        else:
            back = (today.weekday() - [d.lower() for d in WEEKDAYS].index(what)) % 7 or 7
            found.append((today - timedelta(days=back),) * 2)
    if _EARLIER_TODAY.search(question):
        found.append((today, today))
    return tuple(found)


def _spans(question: str, said: date, today: date) -> list[tuple[date, date]]:
    """Every period ``question`` names as (first day, last day said of it): a named day or month reaches
    ``TIME_SLACK_DAYS`` past its end (people tell of a day afterwards), and one named without a year is taken in
    ``said``'s year and the year before (a question in January about "December"); a day named from today
    ("yesterday", "last week") is that day and no other."""
    spans = list(relative_period(question, today))
    slack = timedelta(days=TIME_SLACK_DAYS)
    for year, month, first, last in named_period(question):
        for y in ([year] if year else [said.year, said.year - 1]):
            if not 1 <= y <= 9998:
                continue
            month_end = (date(y + month // 12, month % 12 + 1, 1) - timedelta(days=1)).day
            if first <= month_end:
                spans.append((date(y, month, first), date(y, month, min(last, month_end)) + slack))
    return spans


def by_named_time(question: str, scores: dict[int, float], days: Mapping[int, str],
                  today: date | None = None) -> dict[int, float]:
    """``scores`` with the lines said in a period ``question`` names (``_spans``: ``named_period`` and
    ``relative_period`` from ``today``, the clock's by default) at 1 + ``TIME_WEIGHT`` times theirs; unchanged
    when it names none. A stored day that is no calendar day counts as undated."""
    if not TIME_WEIGHT or not (named_period(question) or _RELATIVE.search(question)):
        return scores
    today = today or now().date()
    said_then: dict[str, bool] = {}
    out = {}
    for code, score in scores.items():
        day = days.get(code // 2)
        if day is not None and day not in said_then:
            try:
                said = date.fromisoformat(day)
                said_then[day] = any(start <= said <= end for start, end in _spans(question, said, today))
            except (ValueError, OverflowError):  # "2023-02-30", or a year at the calendar's edge
                said_then[day] = False
        out[code] = score * (1 + TIME_WEIGHT) if day is not None and said_then[day] else score
    return out


_RELATIVE = re.compile("|".join(p.pattern for p in (_AGO, _LAST, _YESTERDAY, _EARLIER_TODAY)), re.I)


def _part(entries: tuple, turn_id: int) -> dict | None:
    """One turn's part from (quotes, texts, answers, skipped, assistant): its quote and pieces (and how many of
    them are the assistant's words, or a tool answer), that it was skipped, or None."""
    quotes, texts, answers, skipped = entries[:4]
    assistant = entries[4] if len(entries) > 4 else {}
    if turn_id in texts:
        part = {"quote": quotes[turn_id], "texts": list(texts[turn_id])}
        if answers.get(turn_id):
            part["answers"] = answers[turn_id]
        if assistant.get(turn_id):
            part["assistant"] = assistant[turn_id]
        return part
    return {"skipped": True} if turn_id in skipped else None


def _is_assistant_line(line: str) -> bool:
    read = read_quote_lines(line)[0]
    return read.quoted and read.role == "assistant"


def _speaker(line: QuoteLine) -> str | None:
    """Who said a quote line: the name it carries (``user (Dana): "..."``, the message's ``name``), or else the
    ``Name: `` that starts its words (a transcript's way)."""
    named = line.name or (_SPEAKER_PREFIX.match(line.text) or [None, None])[1]
    return " ".join(named.split()) if named else None


def side_lines(quote: str) -> dict[int, str]:
    """A stored quote's words per side (USER: the user's line; ASSISTANT: the tools and the answer)."""
    out: dict[int, list[str]] = {}
    for n, line in enumerate(read_quote_lines(quote)):
        out.setdefault(USER if n == 0 else ASSISTANT, []).append(line.text)
    return {side: " ".join(parts) for side, parts in out.items()}


_SPEAKER_PREFIX = re.compile(r"^(?:\[[^\]]*\]\s*)*([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}): ")


def side_speakers(quote: str) -> dict[int, str]:
    """Who said each side of a stored quote (``_speaker`` of its first quote line); sides without a name
    are left out."""
    out: dict[int, str] = {}
    for n, line in enumerate(read_quote_lines(quote)):
        side = USER if n == 0 else ASSISTANT
        if line.quoted and side not in out and _speaker(line):
            out[side] = _speaker(line)
    return out


def _side_speaker(quote: str, side: int) -> str | None:
    """Who said one side in quote lines that may hold both (a tool's answer is quoted with its turn): the first
    quote line of that side's role that names a speaker (``_speaker``)."""
    role = "user" if side == USER else "assistant"
    return next((_speaker(line) for line in read_quote_lines(quote)
                 if line.quoted and line.role == role and _speaker(line)), None)


class _Lexical:
    """BM25 over the quoted lines (one document per side of a turn), added to as turns are; in Python for now."""

    def __init__(self) -> None:
        self.postings: dict[str, dict[int, int]] = {}  # word -> line code -> count
        self.length: dict[int, int] = {}  # line code -> words
        self.texts: dict[int, str] = {}
        self.days: dict[int, str] = {}  # turn id -> the day its quote's tag gives (dated turns only)
        self.terms: dict[int, frozenset[str]] = {}  # line code -> its terms
        self.total = 0
        self.postings_read = 0
        self.speaker: dict[int, str] = {}  # line code -> who said it (see ``side_speakers``)
        self.speaker_lines: dict[str, int] = {}  # speaker -> how many lines they started
        self._named: dict[str, re.Pattern] = {}  # speaker -> how a question names them (whole words, any case)

    def add(self, turn_id: int, quote: str) -> None:
        """One turn's quote (the user's line first, then the assistant's lines)."""
        day = read_turn_day(quote)
        if day is not None:
            self.days[turn_id] = day
        names = side_speakers(quote)
        for side, text in side_lines(quote).items():
            self._add_line(turn_id * 2 + side, text, names.get(side))

    def add_sides(self, turn_id: int, quotes: Mapping[int, str]) -> None:
        """One turn's sides quoted apart (side -> its quote lines, as a session store keeps them), for the rules
        across lines only: each line's day and speaker, not its words (the store ranks words itself)."""
        for side, quote in sorted(quotes.items()):
            day = read_turn_day(quote)
            if day is not None:
                self.days.setdefault(turn_id, day)
            self._add_line(turn_id * 2 + side, "", _side_speaker(quote, side))

    def _add_line(self, code: int, text: str, name: str | None) -> None:
        if code in self.length:
            return
        if name:
            self.speaker[code] = name
            self.speaker_lines[name] = self.speaker_lines.get(name, 0) + 1
        words = terms(text) if text else []
        self.texts[code], self.length[code] = text, len(words)
        self.terms[code] = frozenset(words)
        self.total += len(words)
        for word in words:
            posting = self.postings.setdefault(word, {})
            posting[code] = posting.get(code, 0) + 1

    def text(self, code: int) -> str:
        return self.texts.get(code, "")

    def named_speaker(self, question: str) -> str | None:
        """The one speaker ``question`` names (a name that starts at least ``MIN_SPEAKER_LINES`` lines, as whole
        words in any case), or None when it names none or several."""
        named = []
        for name, lines in self.speaker_lines.items():
            if lines < MIN_SPEAKER_LINES:
                continue
            pattern = self._named.get(name)
            if pattern is None:
                pattern = self._named[name] = re.compile(r"(?<![\w'])" + re.escape(name) + r"(?![\w'])", re.I)
            if pattern.search(question):
                named.append(name)
        return named[0] if len(named) == 1 else None

    def search_words(self, question: str) -> str:
        """``question`` without the name of the one speaker it names (``named_speaker``): that name starts every
        line the speaker said, so as a search word it would match all of them, whatever else they said."""
        named = self.named_speaker(question)
        return question if named is None else self._named[named].sub(" ", question)

    def by_named_speaker(self, question: str, scores: dict[int, float]) -> dict[int, float]:
        """``scores`` with every other named speaker's lines at ``SPEAKER_FACTOR`` of theirs when ``question``
        names one speaker (``named_speaker``); unchanged otherwise."""
        named = self.named_speaker(question)
        if named is None:
            return scores
        def other(code: int) -> bool:  # a line another speaker said (a name that starts one line is no speaker)
            said_by = self.speaker.get(code)
            return said_by is not None and said_by != named and self.speaker_lines[said_by] >= MIN_SPEAKER_LINES
        return {code: score * SPEAKER_FACTOR if other(code) else score for code, score in scores.items()}

    def words(self, code: int) -> frozenset[str]:
        return self.terms.get(code, frozenset())

    def rarest(self, code: int, n: int) -> list[str]:
        """The ``n`` words of a line found in the fewest lines (ties alphabetical)."""
        return sorted(self.words(code), key=lambda w: (len(self.postings.get(w, ())), w))[:n]

    def scores(self, question: str) -> dict[int, float]:
        """BM25 of every line holding a word of ``question`` (work: the postings of its words)."""
        lines = len(self.length)
        self.postings_read = 0
        if not lines:
            return {}
        average = self.total / lines or 1.0
        out: dict[int, float] = {}
        for word in set(terms(question)):
            posting = self.postings.get(word)
            if not posting:
                continue
            self.postings_read += len(posting)
            idf = math.log(1 + (lines - len(posting) + 0.5) / (len(posting) + 0.5))
            for code, tf in posting.items():
                norm = tf + BM25_K1 * (1 - BM25_B + BM25_B * self.length[code] / average)
                out[code] = out.get(code, 0.0) + idf * tf * (BM25_K1 + 1) / norm
        return out
