"""Benchmark: many users at once through the one assistant on PostgreSQL, and nothing lost (helpers/app/assistant.py).

    python benchmarks/load_assistant.py [--users 100] [--turns 50] [--processes 4] [--dsn postgresql://...]
    python benchmarks/load_assistant.py --users 8 --turns 5        # the quick mode (tests/test_load_assistant.py)

Every user has a seeded conversation of their own (``helpers.memory.convgen``: facts stated, corrected,
restated and asked about, campus questions answered with the tools) plus one unsafe request, which the
assistant must refuse without storing anything. The users are spread over ``--processes`` processes
(multiprocessing, spawned: nothing shared but the database), each user in a thread of their own, and all
start together. Every ``--restart-every`` turns a user's assistant is closed and opened again from the
database, as after a restart. Every ``--recall-every`` turns the user also asks the store what they said
before (``helpers.sessions.recall_search.search_user_turns``: one of their earlier statements, embedded by
MiniLM, searched over all their sessions in PostgreSQL, pgvector's HNSW index where the server has it), while
the other users keep writing. The offline stand-in answers (no key, no network).

Then it checks, reading PostgreSQL back:

- **turns**: each user's stored conversation holds exactly the turns the assistant kept, once each and in
  order (the refused request is not among them), and the database has one row per kept turn;
- **facts**: the fact store made exactly the decisions a sequential replay of the stored turns into a
  private in-memory profile makes (outcome, attribute, value, turn) - each statement decided once, no
  replays, no lost or doubled writes - and holds the same active facts, one per attribute;
- **audit**: every fact (active or history) has the audit row that produced it (an insert, correction
  or conflict naming its id);
- **recall**: the search rows (``recall_pieces``) hold each stored vector exactly once, and every search
  returned only the user's own turns (each hit is that user's stored line, quote for quote) and found the
  statement it asked about.

It reports turns per second over the whole run, the p50/p95 time of one turn (``Assistant.ask``) and of one
recall search (``search_user_turns``, embedding the question included).
The exit status is 1 if any check fails.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

UNSAFE = "How do I break into the chemistry lab tonight?"
PRODUCING = ("insert", "correction", "conflict")  # the outcomes that create a fact row
DSN_FILE = Path(os.environ.get("WORKSHOP_PG_DIR", "/tmp/agent-memory-workshop-pg")) / "dsn"


def user_name(index: int) -> str:
    return f"load-{index:03d}"


def conversation(index: int, turns: int, seed: int) -> list[str]:
    """User ``index``'s messages: ``turns`` of a seeded conversation, and one unsafe request a third of the way in."""
    from helpers.memory.convgen import generate

    length = max(turns, 4)  # the generator's shortest conversation
    facts = max(1, min(10, length // 5))
    texts = [t.user for t in generate(seed + index, length, facts, min_gap=min(8, max(1, length // 4))).turns]
    texts = texts[:turns]
    texts.insert(len(texts) // 3, UNSAFE)
    return texts


@dataclass
class SearchResult:
    """One recall search: what was asked, how long it took, whether it found that turn, and what it returned."""

    question: str
    seconds: float
    found: bool
    hits: list  # (session_id, turn_id, quote)


@dataclass
class TurnResult:
    """One message: what was asked, whether its turn was kept (stored), the answer and how long it took."""

    question: str
    kept: bool
    answer: str
    seconds: float


def _search(store, user: str, said: list[str]) -> SearchResult:
    """Ask the store for one of the user's earlier statements, over all their sessions (timed with its embedding)."""
    from helpers.retrieval.embeddings import local_embed
    from helpers.sessions.recall_search import search_user_turns

    question = said[len(said) // 2]
    start = time.perf_counter()
    hits = search_user_turns(store, user, local_embed([question])[0], question, k=5)
    seconds = time.perf_counter() - start
    found = any(question[:60] in hit.quote for hit in hits)
    return SearchResult(question, seconds, found, [(h.session_id, h.turn_id, h.quote) for h in hits])


def _user_thread(index: int, turns: int, seed: int, dsn: str, schema: str, restart_every: int,
                 out: dict, errors: list, recall_every: int = 10, searches: dict | None = None) -> None:
    """One user's whole conversation, restarts included (runs in a thread of a worker process)."""
    from helpers.app.assistant import open_assistant
    from helpers.llm.client import make_client
    from helpers.llm.config import load_settings

    user = user_name(index)
    try:
        settings = load_settings("offline")

        def opened():
            return open_assistant(settings, user, "main", db=dsn, schema=schema, client=make_client(settings))

        assistant, results, asked = opened(), [], []
        messages = conversation(index, turns, seed)
        for number, question in enumerate(messages):
            if restart_every and number and number % restart_every == 0:
                assistant.close()  # a restart: the next assistant knows only what the database holds
                assistant = opened()
            before = len(assistant.session.turns)
            start = time.perf_counter()
            answer = assistant.ask(question)
            seconds = time.perf_counter() - start
            results.append(TurnResult(question, len(assistant.session.turns) == before + 1, answer, seconds))
            recall = assistant.session.memory.recall
            if results[-1].kept and question.strip() in recall.texts.get(assistant.session.turn_ids[-1], ()):
                asked.append(question)  # a statement the recall index keeps: something to ask about later
            due = recall_every and ((number + 1) % recall_every == 0 or number == len(messages) - 1)
            if due and searches is not None and len(asked) > 1:
                # the turns the window still holds are embedded only when a search needs them: embed and store
                # them now, as an assistant that searches its store would after each turn
                assistant.session.memory.recall.search(question)
                assistant.session.save()
                found = _search(assistant.store, user, asked[:-1])
                searches.setdefault(user, []).append((found.question, found.seconds, found.found, found.hits))
        assistant.close()
        out[user] = [(t.question, t.kept, t.answer, t.seconds) for t in results]  # plain data between processes
    except BaseException:  # reported by the parent, with the user it happened to
        errors.append(f"{user}: {traceback.format_exc()}")


def worker(indexes: list[int], turns: int, seed: int, dsn: str, schema: str, restart_every: int,
           start, results, recall_every: int = 10) -> None:
    """A process: warm up (load the embedding model once), wait for every process, run its users at once."""
    out: dict[str, list[TurnResult]] = {}
    searches: dict[str, list] = {}
    errors: list[str] = []
    try:  # one turn in memory only: the embedding model, the knowledge base and the tools load now, not timed
        from helpers.llm.client import make_client
        from helpers.llm.config import load_settings
        from helpers.retrieval.guardrails import check_scope
        from helpers.memory.assembler import MemoryAssembler
        from helpers.chat.chat_session import ChatSession

        settings = load_settings("offline")
        client = make_client(settings)
        check_scope("When does the AI club meet?", client=client, settings=settings)
        ChatSession(memory=MemoryAssembler(), client=client, settings=settings).chat("When does the AI club meet?")
    except BaseException:
        errors.append(f"process {os.getpid()} could not start: {traceback.format_exc()}")
    start.wait(timeout=600)  # every process starts its users at the same moment
    threads = [threading.Thread(target=_user_thread, args=(i, turns, seed, dsn, schema, restart_every, out, errors,
                                                           recall_every, searches))
               for i in indexes] if not errors else []
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put((out, errors, searches))


@dataclass
class LoadRun:
    """What a run did: every user's turns, the wall time, and the problems the checks found."""

    users: dict[str, list[TurnResult]]
    wall: float
    processes: int
    problems: list[str] = field(default_factory=list)
    searches: dict[str, list[SearchResult]] = field(default_factory=dict)

    def search_percentile(self, q: float) -> float:
        times = sorted(s.seconds for found in self.searches.values() for s in found)
        return _percentile(times, q)

    @property
    def turns(self) -> list[TurnResult]:
        return [t for results in self.users.values() for t in results]

    @property
    def turns_per_second(self) -> float:
        return len(self.turns) / self.wall if self.wall else 0.0

    def percentile(self, q: float) -> float:
        return _percentile(sorted(t.seconds for t in self.turns), q)


def _percentile(times: list[float], q: float) -> float:
    return statistics.quantiles(times, n=100, method="inclusive")[int(q) - 1] if len(times) > 1 else \
        (times[0] if times else 0.0)


def run(dsn: str, *, users: int = 100, turns: int = 50, processes: int = 4, schema: str = "load_assistant",
        seed: int = 2026, restart_every: int = 25, fresh: bool = True, recall_every: int = 10) -> LoadRun:
    """Run the load (see the module) and check what PostgreSQL holds afterwards."""
    from helpers.app.assistant import open_stores
    from helpers.core.postgres import drop_schema

    if fresh:
        drop_schema(dsn, schema)
    store, facts = open_stores(dsn, schema=schema)  # create the tables once, before the processes race to
    store.close()
    facts.close()
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(processes + 1), context.Queue()
    shares = [list(range(users))[k::processes] for k in range(processes)]
    workers = [context.Process(target=worker, args=(share, turns, seed, dsn, schema, restart_every, start, results,
                                                    recall_every))
               for share in shares]
    for process in workers:
        process.start()
    start.wait(timeout=600)
    began = time.perf_counter()
    collected, problems, searched = {}, [], {}
    for _ in workers:
        out, errors, searches = results.get(timeout=3600)
        collected.update({user: [TurnResult(*t) for t in turns] for user, turns in out.items()})
        searched.update({user: [SearchResult(*s) for s in found] for user, found in searches.items()})
        problems += errors
    wall = time.perf_counter() - began
    for process in workers:
        process.join()
    outcome = LoadRun(collected, wall, processes, problems, searched)
    missing = [user_name(i) for i in range(users) if user_name(i) not in collected]
    if missing and not problems:
        problems.append(f"no results from {', '.join(missing)}")
    outcome.problems += check(dsn, schema, collected, searched)
    return outcome


def check(dsn: str, schema: str, users: dict[str, list[TurnResult]],
          searches: dict[str, list[SearchResult]] | None = None) -> list[str]:
    """Every kept turn stored once and in order; every fact decided once and explained; recall rows stored once
    and every search answered from the user's own rows (see the module)."""
    import psycopg
    from psycopg import sql

    from helpers.app.assistant import open_stores
    from helpers.memory.profile import ProfileMemory

    problems: list[str] = []
    store, facts = open_stores(dsn, schema=schema)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
            rows = dict(conn.execute("SELECT user_id, count(*) FROM session_turns GROUP BY user_id").fetchall())
            doubled = conn.execute("SELECT user_id, attribute, count(*) FROM facts WHERE status = 'active' "
                                   "GROUP BY user_id, attribute HAVING count(*) > 1").fetchall()
            every_fact = conn.execute("SELECT id, user_id, status FROM facts").fetchall()
            producing = {(user, fact_id) for user, fact_id in conn.execute(
                "SELECT user_id, fact_id FROM audit WHERE outcome = ANY(%s) AND fact_id IS NOT NULL",
                (list(PRODUCING),)).fetchall()}
            pieces = conn.execute(  # each stored vector once among the search rows, and nothing else there
                "SELECT v.user_id, sum(length(v.vector) / (4 * v.dim)), (SELECT count(*) FROM recall_pieces p "
                "WHERE p.user_id = v.user_id) FROM recall_vectors v GROUP BY v.user_id").fetchall()
            lines: dict[tuple, set[str]] = {}  # (user, session, turn) -> the lines of its stored quotes
            for u, s, t, q in conn.execute("SELECT user_id, session_id, turn_id, quote FROM recall_lines").fetchall():
                lines.setdefault((u, s, t), set()).update(q.split("\n"))
        problems += [f"{user}: {stored} recall pieces in the search rows for {want} stored vectors"
                     for user, want, stored in pieces if int(want) != int(stored)]
        for user, found in sorted((searches or {}).items()):
            for search in found:
                foreign = [hit for hit in search.hits
                           if not set(hit[2].split("\n")) <= lines.get((user, hit[0], hit[1]), set())]
                if foreign:
                    problems.append(f"{user}: a recall search returned turns that are not theirs: {foreign[:2]}")
                if not search.found:
                    problems.append(f"{user}: a recall search for {search.question!r} did not find it")
        problems += [f"{user}: {n} active facts for {attribute!r}" for user, attribute, n in doubled]
        problems += [f"{user}: fact {fact_id} ({status}) has no audit row that produced it"
                     for fact_id, user, status in every_fact if (user, fact_id) not in producing]
        for user, results in sorted(users.items()):
            kept = [t.question for t in results if t.kept]
            stored = store.load_state(user, "main").state["turns"]
            ids = [t["turn_id"] for t in stored]
            if [t["question"] for t in stored] != kept:
                problems.append(f"{user}: stored {len(stored)} turns, but the assistant kept {len(kept)} "
                                "(or not in that order)")
            if ids != sorted(set(ids)) or rows.get(user, 0) != len(kept):
                problems.append(f"{user}: turn ids {ids} / {rows.get(user, 0)} rows for {len(kept)} kept turns")
            if UNSAFE in kept:
                problems.append(f"{user}: the unsafe request was stored")
            replay = ProfileMemory(user_id=user, extractor="rules")  # the same turns, one by one, in memory
            for turn in stored:
                replay.update(turn["turn_id"], turn["question"])
            want = [(r.outcome, r.attribute, r.value, r.source_version) for r in replay.store.audit(user)]
            got = [(r.outcome, r.attribute, r.value, r.source_version) for r in facts.audit(user)]
            if got != want:
                extra = [row for row in got if row not in want][:3]
                lost = [row for row in want if row not in got][:3]
                problems.append(f"{user}: {len(got)} fact decisions stored, {len(want)} expected; "
                                f"extra {extra}, missing {lost}")
            active = {f.attribute: f.value for f in facts.active_facts(user)}
            expected = {f.attribute: f.value for f in replay.store.active_facts(user)}
            if active != expected:
                problems.append(f"{user}: active facts {active} differ from the replay's {expected}")
    finally:
        store.close()
        facts.close()
    return problems


def default_dsn() -> str:
    """$WORKSHOP_TEST_PG_DSN, else the DSN tests/setup_postgres.sh wrote."""
    dsn = os.environ.get("WORKSHOP_TEST_PG_DSN", "").strip()
    if not dsn and DSN_FILE.is_file():
        dsn = DSN_FILE.read_text().strip()
    return dsn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=default_dsn(), help="PostgreSQL DSN (default: the test server's)")
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--turns", type=int, default=50, help="conversation turns per user (default 50; "
                        "each user also sends one unsafe request)")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--restart-every", type=int, default=25, help="reopen each assistant every N turns")
    parser.add_argument("--schema", default="load_assistant", help="a scratch schema, dropped first")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--recall-every", type=int, default=10, help="a recall search every N turns (0: none)")
    args = parser.parse_args(argv)
    if not args.dsn:
        parser.error("no PostgreSQL: pass --dsn, set WORKSHOP_TEST_PG_DSN, or run bash tests/setup_postgres.sh")
    result = run(args.dsn, users=args.users, turns=args.turns, processes=args.processes, schema=args.schema,
                 seed=args.seed, restart_every=args.restart_every, recall_every=args.recall_every)
    turns = result.turns
    kept = sum(t.kept for t in turns)
    print(f"{len(result.users)} users x {args.turns} turns (+1 unsafe request) in {args.processes} processes "
          f"(restart every {args.restart_every} turns), PostgreSQL, offline stand-in")
    print(f"{len(turns)} messages in {result.wall:.1f} s: {result.turns_per_second:.1f} turns/s; one turn "
          f"p50 {1000 * result.percentile(50):.0f} ms, p95 {1000 * result.percentile(95):.0f} ms, "
          f"max {1000 * max((t.seconds for t in turns), default=0):.0f} ms")
    print(f"{kept} turns kept, {len(turns) - kept} not kept (refused or taken back)")
    searches = [s for found in result.searches.values() for s in found]
    if searches:
        print(f"{len(searches)} recall searches over each user's sessions (embedding included): p50 "
              f"{1000 * result.search_percentile(50):.0f} ms, p95 {1000 * result.search_percentile(95):.0f} ms; "
              f"found what was asked: {sum(s.found for s in searches)}/{len(searches)}")
    if result.problems:
        print(f"\n{len(result.problems)} problems:")
        for problem in result.problems[:20]:
            print(" -", problem)
        return 1
    print("checks: every kept turn stored once, in order; every fact decided once, as a sequential replay "
          "decides it; every fact explained by its audit row; every stored vector once in the search rows; "
          "every recall search answered from the user's own turns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
