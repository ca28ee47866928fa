"""ask: seeds → paths → context → plan → answer, stored so `trace` can replay it.

`Asker` holds what a batch reuses (the embedder, each conversation's graph,
note vectors and event-sentence vectors), so `ask --batch` loads models once;
a write to the store that is not the Asker's own reloads them (`Asker._scope`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import islice
from typing import TYPE_CHECKING, Any

import numpy as np
import pysqlite3.dbapi2 as sqlite3

from tracecli.blas import one_blas_thread
from tracecli.errors import BadInput
from tracecli.graph.facets import facet_label
from tracecli.query.answer import (NOT_ENOUGH, Answer, Readers, answer_offline, event_answer, newest_successor, read_event,
                                   states_asked_code)
from tracecli.query.candidates import PRIORS, Candidate, best_valid, gather, mark_winner
from tracecli.query.choose import (Flags, Row, candidate_rows, choose_stating, fitted_for, flags_of, replaceable,
                                   restates)
from tracecli.query.paths import EventNode, Graph, Path, Step, load_graph, rank_paths, score_path, traverse
from tracecli.query.retrieve import NoteHit, hybrid_search, mentions
from tracecli.query.settings import AskSettings
from tracecli.query.shape import PLAN_TEXT, QueryShape, addressed, asks_before, before_clause_dropped, event_clause_dropped, shape_of
from tracecli.query.vectors import EventVectors
from tracecli.scope import DEFAULT_NAMESPACE, llm_scope, qualified_ref, resolve_scope
from tracecli.store.db import ASIDE_WAIT, Store, dumps, placeholders, utc_now
from tracecli.text import content_words, count_tokens, has_surrogate, short_hash
from tracecli.timeutil import iso, parse_iso, parse_user_date
from tracecli.wiki.route import ClaimRow, load_claim_rows, page_trajectories, route_pages

if TYPE_CHECKING:
    from tracecli.providers.embeddings import Embedder
    from tracecli.providers.llm import ChatModel


@dataclass
class ContextItem:
    kind: str  # note | path | claim | wiki
    text: str
    source_refs: list[str]
    score: float


@dataclass
class StepOut:
    event_id: str
    description: str
    time: str | None
    validity: str
    valid_until: str | None
    relation_to_next: str | None


@dataclass
class PathOut:
    score: float
    signals: dict[str, float]
    steps: list[StepOut]
    answer: bool = False  # the path the answer was read from


@dataclass
class AskResult:
    """What `ask --json` prints (keys pinned by tests)."""

    answer_id: str
    question: str
    answer: str
    abstained: bool
    plan: str
    as_of: str | None
    source_refs: list[str]
    context: list[ContextItem]
    paths: list[PathOut]
    timing_ms: dict[str, float]
    namespace: str = DEFAULT_NAMESPACE
    confidence: float = 0.0  # 0–1: how well the answer is grounded
    support: str = "none"  # chain | frame | sentence | llm | fallback:<chain|frame|sentence> | none
    warnings: list[str] = field(default_factory=list)  # what went wrong around the answer (printed on stderr)
    candidates: list[Candidate] = field(default_factory=list)  # what each evidence source proposed; the winner marked


@dataclass
class _WikiIndex:
    """The Memory Wiki of a scope as `ask` reads it (TrajWiki's query side): claims with their time spans,
    each page's trajectories, each person's entity pages, and each message's note (for relevance)."""

    claims: dict[str, ClaimRow]
    by_trajectory: dict[str, list[ClaimRow]]
    page_trajectories: dict[str, list[str]]
    entity_pages: dict[str, list[str]]
    message_note: dict[str, int]
    #: message id → (text, status, content words) of the claims that cite it alone (a claim citing several messages
    #: is not a restatement of one of them), for the note a claim may stand in for
    by_message: dict[str, list[tuple[str, str, frozenset[str]]]] = field(default_factory=dict)

    @classmethod
    def load(cls, store: Store, conversation_ids: Sequence[str]) -> _WikiIndex:
        claims = load_claim_rows(store, conversation_ids)
        by_traj: dict[str, list[ClaimRow]] = {}
        for c in claims.values():
            if c.trajectory_id:
                by_traj.setdefault(c.trajectory_id, []).append(c)
        marks = placeholders(conversation_ids)
        people: dict[str, list[str]] = {}
        if store.has_table("wiki_pages"):
            for pid, title in store.execute(
                    f"SELECT id, title FROM wiki_pages WHERE type = 'entity' AND conversation_id IN ({marks}) ORDER BY rowid",
                    list(conversation_ids)):
                people.setdefault(title.split(":")[0].strip(), []).append(pid)
        notes = {m: int(r) for r, m in store.execute(
            f"SELECT rowid, message_id FROM notes WHERE conversation_id IN ({marks})", list(conversation_ids))}
        by_message: dict[str, list[tuple[str, str, frozenset[str]]]] = {}
        for c in claims.values():
            if len(c.message_ids) == 1:
                by_message.setdefault(c.message_ids[0], []).append((c.text, c.status, frozenset(content_words(c.text))))
        return cls(claims, by_traj, page_trajectories(store, conversation_ids), people, notes, by_message)


@dataclass
class _Scope:
    """What every question over the same conversations reuses, while the store is unchanged (see `Asker._scope`)."""

    conversation_ids: list[str]
    graph: Graph
    names: list[str]
    now: dt.datetime | None
    note_matrix: np.ndarray
    note_rowids: list[int]
    stamp: tuple[Any, ...] = ()
    data_version: int = -1  # PRAGMA data_version when last checked (moves when another connection commits)
    vectors: EventVectors | None = None
    outdated: dict[tuple[str | None, bool], set[int]] = field(default_factory=dict)  # note rowids shown [OUTDATED], per (as-of, flat)
    quote_words: dict[str, frozenset[str]] = field(default_factory=dict)  # event id → content words of its quote
    flat: Graph | None = None  # the graph without edges or validity (`--ablate graph`), made on first use
    wiki: _WikiIndex | None = None  # the claims, pages and trajectories `ask` routes through, read on first use
    participants: frozenset[str] = frozenset()  # the people who speak in the scope's conversations

    def view(self, ablate: frozenset[str]) -> Graph:
        """The graph `ask` reads: the full one, or with `graph` ablated the same events as flat evidence — no edges, no
        validity from revisions (TRACE's 'w/o graph' setting: the same reader over the same sentences)."""
        if "graph" not in ablate:
            return self.graph
        if self.flat is None:
            events = {eid: replace(ev, validity=1.0, valid_until=None) for eid, ev in self.graph.events.items()}
            self.flat = Graph(events, {}, {}, self.graph.by_note, self.graph.by_topic)
        return self.flat


def _stamp(store: Store, conversation_ids: Sequence[str]) -> tuple[Any, ...]:
    """A cheap fingerprint of what a scope was loaded from: row counts and newest rowids, last build time.

    Ingest adds notes, build-graph (incremental or --rebuild) writes `graph_sessions.built_at`,
    forget removes rows: each changes the fingerprint, so a cached scope is reloaded.
    """
    marks = placeholders(conversation_ids)
    row = store.execute(
        "SELECT " + ", ".join(f"(SELECT COUNT(*) || ':' || COALESCE(MAX({store.row_version}), 0) FROM {t} WHERE conversation_id IN ({marks}))"
                              for t in ("events", "edges", "notes", "messages"))
        + f", (SELECT COUNT(*) || ':' || COALESCE(MAX(built_at), '') FROM graph_sessions WHERE conversation_id IN ({marks}))",
        [*conversation_ids] * 5,
    ).fetchone()
    return tuple(row)


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else iso(value)


def short_text(ev: EventNode) -> str:
    """One line for an event: 'Alice is moving to Porto' or its description."""
    if ev.facet and ev.value:
        text = f"{ev.subject} {facet_label(ev.facet)} {ev.value}"
        return f"{ev.subject} no longer: {text[len(ev.subject) + 1:]}" if ev.negated else text
    words = ev.description.split()
    return " ".join(words[:40]) + (" …" if len(words) > 40 else "")


class Asker:
    """Answers questions over one store; reuse it for many questions."""

    def __init__(self, store: Store, *, settings: AskSettings | None = None, embedder: Embedder | None = None,
                 llm: ChatModel | None = None) -> None:
        self.store = store
        self.settings = settings or AskSettings()
        self._embedder = embedder
        self.llm = llm
        self._scopes: dict[tuple[str, ...], _Scope] = {}
        self._scope_ids: list[str] = []
        self._changes = -1  # the connection's total_changes after this Asker's own last write
        self._short_vecs: dict[str, np.ndarray] = {}  # asked phrases and candidate values, normalised (value fit)
        self._phrase_vecs: dict[str, np.ndarray] = {}  # asked phrases alone, normalised (the learned choice)
        #: when a list, each question's candidate rows for the learned choice are appended to it
        #: (`benchmarks/train_chooser.py`)
        self.choice_log: list[tuple[list[Row], Flags]] | None = None

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from tracecli.providers.embeddings import get_embedder

            self._embedder = get_embedder()
        return self._embedder

    # -- scope ------------------------------------------------------------------------
    def _scope(self, conversation_ids: list[str]) -> _Scope:
        """The cached scope of these conversations, reloaded when the store changed under it.

        A write through this connection that was not this Asker's own (an in-process
        build-graph, ingest, forget) always reloads. A commit by another connection
        reloads when the conversations' fingerprint (`_stamp`) moved, so another
        process storing its answers does not.
        """
        key = tuple(conversation_ids)
        if self.store.conn.total_changes != self._changes:
            self._scopes.clear()
            self._changes = self.store.conn.total_changes
        cached = self._scopes.get(key)
        version = self.store.data_version()
        if cached is not None and cached.data_version == version:
            return cached
        stamp = _stamp(self.store, key)
        if cached is not None and cached.stamp == stamp:
            cached.data_version = version
            return cached
        marks = placeholders(key)
        graph = load_graph(self.store, key)
        names: set[str] = {ev.subject for ev in graph.events.values()}
        participants: set[str] = set()
        for (parts,) in self.store.execute(f"SELECT participants FROM conversations WHERE id IN ({marks})", key):
            participants.update(json.loads(parts))
        names |= participants
        last = self.store.execute(f"SELECT MAX(timestamp) FROM messages WHERE conversation_id IN ({marks})", key).fetchone()[0]
        rows = self.store.execute(
            f"SELECT v.rowid, v.embedding FROM note_vectors v JOIN notes n ON n.rowid = v.rowid "
            f"WHERE n.conversation_id IN ({marks}) ORDER BY v.rowid", key
        ).fetchall() if self.store.has_table("note_vectors") else []
        matrix = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows]) if rows else np.zeros((0, 1), np.float32)
        vectors = EventVectors(self.store, self.embedder, key)
        vectors.load(graph.events.values())
        scope = _Scope(list(key), graph, sorted(names), parse_iso(last) if last else None, matrix,
                       [int(r[0]) for r in rows], stamp, version, vectors, participants=frozenset(participants))
        self._scopes[key] = scope
        return scope

    def _own_writes_done(self) -> None:
        """Count this Asker's own writes (answers, event vectors) as seen, so they do not reload the scopes."""
        self._changes = self.store.conn.total_changes

    def warm(self, *, conversation_id: str | None = None, namespace: str | None = None, nlp: bool = True,
             progress: Callable[[int, int], None] | None = None) -> int:
        """Load what a first question would: the embedder, the scope, every event's sentence vector, and
        (unless `nlp` is False) spaCy, the gazetteer and dateparser.

        Returns how many event vectors were computed (0 once the store holds them all).
        """
        where = resolve_scope(self.store, namespace, conversation_id)
        self.embedder.embed_batch(["warm up"])
        scope = self._scope(list(where.conversation_ids))
        assert scope.vectors is not None
        made = scope.vectors.ensure(sorted(scope.graph.events.values(), key=lambda e: e.id), progress)
        self._own_writes_done()
        if nlp:
            import dateparser

            from tracecli.graph.gazetteer import is_place
            from tracecli.graph.nlp import get_nlp

            with one_blas_thread():
                get_nlp()("Alice met Bob in Paris.")  # who/where answers read entities
            is_place("Paris")
            # question dates the quick patterns do not cover go to dateparser, whose first call takes ~0.4 s
            dateparser.parse("1 February, 2023", languages=["en"], settings={"RETURN_AS_TIMEZONE_AWARE": False})
        return made

    def _unmentioned(self, shape: QueryShape, conversation_ids: Sequence[str]) -> list[str]:
        """The question's unknown names when it names no known person and no message mentions any of them."""
        if shape.people or not shape.unknown:
            return []
        if any(mentions(self.store, word, conversation_ids) for word in shape.unknown):
            return []
        return list(shape.unknown)

    # -- the pipeline -----------------------------------------------------------------
    def ask(self, question: str, *, conversation_id: str | None = None, as_of: str | dt.datetime | None = None,
            budget: int | None = None, store_answer: bool = True, namespace: str | None = None) -> AskResult:
        """Answer one question from one conversation or all of a namespace's; stores it unless told not to.

        Retrieval, traversal and the LLM answer read only the namespace's
        conversations (`tracecli.scope.resolve_scope`).

        BLAS runs on one thread meanwhile, as build-graph's parses and the MCP server do: spaCy's parses of
        the question and of candidate sentences multiply small matrices, on which OpenBLAS's second thread
        only busy-waits (one parse took ~160 ms on two threads and ~15 ms on one on the loaded 2-core
        machine), and one thread gives the same numbers on any machine, whatever its core count.
        """
        from tracecli.graph.nlp import wait_for_preload

        try:
            with one_blas_thread():
                return self._ask(question, conversation_id=conversation_id, as_of=as_of, budget=budget,
                                 store_answer=store_answer, namespace=namespace)
        finally:
            wait_for_preload()  # no thread is left importing spaCy when a one-question process exits

    def _preload_nlp(self) -> None:
        """The offline answer step parses the question and candidate sentences: spaCy loads on a second thread while
        the question is embedded and the evidence retrieved (`graph.nlp.preload`; `ask` waits for it before it
        returns). A no-op once loaded, with an LLM, with frames ablated, or on the torch path (spaCy's import hides
        torch while it runs)."""
        from tracecli.graph.nlp import preload
        from tracecli.providers.embeddings import imports_torch

        if self.llm is None and "frames" not in self.settings.ablate and self.settings.preload_nlp \
                and not imports_torch(self.embedder, 2):
            preload(patterns=False)

    def _ask(self, question: str, *, conversation_id: str | None, as_of: str | dt.datetime | None,
             budget: int | None, store_answer: bool, namespace: str | None) -> AskResult:
        if not question or not question.strip():
            raise BadInput("the question is empty")
        if has_surrogate(question):
            raise BadInput("the question holds text that is not valid Unicode (bytes that are not UTF-8)")
        t0 = time.perf_counter()
        timing: dict[str, float] = {}
        settings = self.settings
        self._preload_nlp()
        budget = settings.budget if budget is None else budget
        if budget < 20:
            raise BadInput(f"--budget {budget} is too small; give at least 20 tokens")
        as_of_dt = _as_datetime(as_of)
        # every read of one question sees one committed state, whatever other commands write meanwhile
        with self.store.snapshot():
            where = resolve_scope(self.store, namespace, conversation_id)
            scope = self._scope(list(where.conversation_ids))
            self._scope_ids = scope.conversation_ids
            shape = shape_of(question, scope.names, scope.now, as_of_dt)
            timing["shape"] = _ms(t0)
            t = time.perf_counter()
            # qvec: the question as asked (retrieval, abstention, routing); avec: put to the participant it names,
            # which ranks messages and sentences (`AskSettings.address_named`)
            vecs = np.asarray(self.embedder.embed_batch(list(dict.fromkeys([question, self._query_text(question, shape, scope)]))),
                              dtype=np.float32)
            qvec, avec = vecs[0], vecs[-1]
            timing["embed"] = _ms(t)
            t = time.perf_counter()
            hits = hybrid_search(self.store, question, qvec, scope.conversation_ids, k_dense=settings.k_dense,
                                 k_sparse=settings.k_sparse, rrf_k=settings.rrf_k)
            note_cos = dict(zip(scope.note_rowids, (scope.note_matrix @ avec).tolist())) if len(scope.note_rowids) else {}
            timing["retrieve"] = _ms(t)
            t = time.perf_counter()
            graph = scope.view(settings.ablate)
            self._resolve_event_scopes(shape, graph, scope, qvec, note_cos)
            as_of_iso = _iso(shape.as_of)
            relevance = {eid: max((note_cos.get(r, 0.0) for r in ev.note_rowids), default=0.0) for eid, ev in graph.events.items()}
            seeds = self._seeds(graph, shape, hits, relevance)
            ranked_events = self._rank_events(graph, shape, seeds, relevance, as_of_iso)
            paths = traverse(graph, _one_per_sentence(ranked_events, 20), settings, as_of_iso)
            paths = rank_paths(graph, paths, relevance, settings, as_of_iso)
            timing["graph"] = _ms(t)
            t = time.perf_counter()
            best_cos = max([h.cosine for h in hits[:5]] + [0.0])
            ranked_events = self._rerank_sentences(scope, avec, ranked_events, shape)
            if shape.anchor_note is not None:  # "When her car failed its MOT, …": that message says when, not what
                ranked_events = [(ev, r) for ev, r in ranked_events if shape.anchor_note not in ev.note_rowids]
            readers = self._readers(scope, avec)
            answer = answer_offline(graph, shape, ranked_events, relevance, best_cos, as_of_iso, settings, question,
                                    readers)
            read_from = (graph, ranked_events)
            if settings.before_flat and "graph" not in settings.ablate and answer.support != "chain" \
                    and asks_before(question):
                # "What did Noor drive before the camper van?" with no revision chain or frame to follow back: what
                # held before X is read from the sentences as they were said, not through validity
                # (see AskSettings.before_flat)
                flat = scope.view(settings.ablate | {"graph"})
                read = self._rerank_sentences(scope, avec, self._rank_events(
                    flat, shape, self._seeds(flat, shape, hits, relevance), relevance, as_of_iso), shape)
                answer = answer_offline(flat, shape, read, relevance, best_cos, as_of_iso, settings, question, readers)
                read_from = (flat, read)
            answer = self._choose(*read_from, shape, relevance, answer, question, as_of_iso, readers, best_cos)
            t_wiki = time.perf_counter()
            routed = [] if {"wiki", "graph"} & settings.ablate else self._routed_claims(scope, shape, question, qvec, as_of_iso,
                                                                                       note_cos, avec)
            timing["wiki"] = _ms(t_wiki)
            candidates: list[Candidate] = []
            if not answer.abstained and answer.event_ids:
                source = answer.support if answer.support in PRIORS else "sentence"
                claim_events = [c.event_id for c, _ in routed if c.event_id]
                candidates = gather(graph, source, answer.event_ids[0], ranked_events, [] if "paths" in settings.ablate else paths,
                                    claim_events, relevance, settings, as_of_iso,
                                    lambda evs: self._match(scope, qvec, [(ev, relevance.get(ev.id, 0.0)) for ev in evs]))
                own = next(c for c in candidates if c.event_id == answer.event_ids[0])
                best = best_valid(candidates)
                if best is not None and best is not own and settings.choose_by_evidence and source == "sentence" \
                        and _may_replace(shape, question, graph.events[own.event_id], graph.events[best.event_id]):
                    ev = graph.events[best.event_id]
                    answer = event_answer(graph, newest_successor(graph, ev, as_of_iso) if shape.wants_current else ev,
                                          shape, best_cos, question)
                    mark_winner(candidates, best)
                else:
                    mark_winner(candidates, own, "" if best is own else f"the answer step's {source} pick")
            if self._unmentioned(shape, scope.conversation_ids):
                # "Where is Alice going?" over a chat where no Alice ever appears: whatever ranked best is about
                # someone else, so say that nothing is known rather than answer with another person's facts
                answer = Answer(text=NOT_ENOUGH, abstained=True, method="abstain")
            context, shown_paths = self._context(scope, shape, answer, paths, hits, budget, as_of_iso, relevance, question,
                                                 routed)
        warnings: list[str] = []
        support = "none" if answer.abstained else answer.support
        if self.llm is not None and getattr(self.llm, "is_available", False):
            from tracecli.query.llm_answer import llm_answer

            with llm_scope(self.llm, where):
                answer, problem = llm_answer(self.llm, question, shape, context, answer)
            if problem is not None:
                warnings.append(f"the LLM's answer could not be used ({problem}); this is the offline answer")
                support = "none" if answer.abstained else f"fallback:{answer.support}"
            else:
                support = "none" if answer.abstained else "llm"
        timing["answer"] = _ms(t)
        timing["total"] = _ms(t0)
        refs = list(dict.fromkeys(answer.source_refs))
        result = AskResult(
            answer_id="ans_" + short_hash(question, as_of_iso, ",".join(scope.conversation_ids), time.time_ns()),
            question=question, answer=answer.text, abstained=answer.abstained, plan=shape.plan, as_of=as_of_iso,
            source_refs=refs, context=context, paths=shown_paths, timing_ms=timing, namespace=where.namespace,
            confidence=0.0 if answer.abstained else answer.confidence, support=support, warnings=warnings,
            candidates=[] if answer.abstained else candidates,
        )
        self._record(scope, result if store_answer else None)
        return result

    def _record(self, scope: _Scope, result: AskResult | None) -> None:
        """Store the answer (what `trace` replays) and new event vectors, if the file can be written soon.

        Neither is the answer itself: when another command holds the write lock past a short wait, or
        the file is read-only, the question is still answered and a warning says what was not kept.
        """
        from tracecli.errors import StoreBusy, StoreError, StoreReadOnly

        vectors = scope.vectors
        if result is None and (vectors is None or not vectors.pending):
            return
        try:
            with self.store.transaction(wait=ASIDE_WAIT):
                if vectors is not None:
                    vectors.flush()
                if result is not None:
                    gone = _forgotten_sources(self.store, result, scope.conversation_ids)
                    if gone:  # a `forget` committed after this question's snapshot: its record must not cite them
                        result.warnings.append(f"the answer was not stored: message(s) it cites were forgotten "
                                               f"meanwhile ({', '.join(gone[:5])})")
                    else:
                        save_answer(self.store, result, scope.conversation_ids)
        except (StoreError, sqlite3.OperationalError) as exc:
            if vectors is not None:
                vectors.pending.clear()  # they stay in memory for this process; the next write may keep them
            if result is not None:
                failure = exc if isinstance(exc, StoreError) else self.store.failure(exc)
                reason = ("another command is writing the file" if isinstance(failure, StoreBusy)
                          else "the file is read-only" if isinstance(failure, StoreReadOnly) else str(failure))
                result.warnings.append(f"the answer was not stored ({reason}); "
                                       f"`tracecli trace {result.answer_id}` will not find it")
        self._own_writes_done()

    def _resolve_event_scopes(self, shape: QueryShape, graph: Graph, scope: _Scope, qvec: np.ndarray,
                              note_cos: dict[int, float]) -> None:
        """'before she moved' / 'back when ...' → an as-of time taken from the graph."""
        if shape.before_event_verb:
            verb = shape.before_event_verb
            people = shape.people or [ev.subject for ev in graph.events.values()]
            facet = {"moved": "residence", "switched": None, "changed": None, "started": "employer", "left": "employer",
                     "quit": "employer", "renamed": "pet_name:", "rebooked": "date:"}.get(verb)
            # the first revision of that facet: the time the person's state changed
            hits = sorted(
                (ev for ev in graph.events.values() if ev.subject in people and ev.time_anchor and facet
                 and ev.facet and ev.facet.startswith(facet) and any(e.label == "updates" for e in graph.out.get(ev.id, []))),
                key=lambda e: (e.seq, e.sentence_idx),
            ) or sorted(
                (ev for ev in graph.events.values() if ev.subject in people and re.search(rf"\b{verb}\b", ev.quote, re.I)
                 and ev.time_anchor and ev.facet),
                key=lambda e: (e.seq, e.sentence_idx),
            )
            if hits:
                shape.as_of = parse_iso(hits[0].time_anchor) - dt.timedelta(seconds=1)  # type: ignore[arg-type]
                shape.as_of_source = "question"
        elif shape.event_clause and len(scope.note_rowids):
            # the message that best states the clause's event: its time is the as-of time (unless a date was given)
            vec = np.asarray(self.embedder.embed_batch([shape.event_clause])[0], dtype=np.float32)
            timed = {r: ev for r, ids in graph.by_note.items()
                     if (ev := next((graph.events[e] for e in reversed(ids) if graph.events[e].time_anchor), None))}
            cos = scope.note_matrix @ vec
            best = next((i for i in np.argsort(-cos) if scope.note_rowids[int(i)] in timed), None)
            if best is not None:  # the best-matching note that holds an event (not a note of no statement)
                shape.anchor_note = scope.note_rowids[int(best)]
                if shape.back_when:
                    shape.as_of = parse_iso(timed[shape.anchor_note].time_anchor)  # type: ignore[arg-type]
                    shape.as_of_source = "question"
        if shape.as_of is not None:
            shape.wants_current = False

    def _query_text(self, question: str, shape: QueryShape, scope: _Scope) -> str:
        """What messages and sentences are ranked by (`AskSettings.address_named`): the question without a closing
        before-clause (it says where to cut, not what is sought), put to the one participant it names if it names
        exactly one."""
        if not self.settings.address_named:
            return question
        text = before_clause_dropped(question)
        if self.settings.drop_event_clause:
            text = event_clause_dropped(text)
        speakers = [p for p in shape.people if p in scope.participants]
        return addressed(text, speakers[0]) if len(speakers) == 1 else text

    def _seeds(self, graph: Graph, shape: QueryShape, hits: Sequence[NoteHit], relevance: dict[str, float]) -> dict[str, str]:
        """V_q = V0 ∪ V_ent ∪ V_upd ∪ V_hier, each id tagged with where it came from."""
        s = self.settings
        seeds: dict[str, str] = {}
        for hit in hits[: s.seed_notes]:
            for eid in graph.by_note.get(hit.rowid, []):
                seeds.setdefault(eid, "dense+sparse")
        people = set(shape.people)
        for ev in graph.events.values():
            if ev.subject in people and ev.facet and any(
                ev.facet == f or (f.endswith(":*") and ev.facet.startswith(f[:-1])) for f in shape.facets
            ):
                seeds.setdefault(ev.id, "entity")
        for eid in list(seeds):
            for e in graph.out.get(eid, []) + graph.into.get(eid, []):
                if e.label in ("updates", "contradicts"):
                    seeds.setdefault(e.src if e.dst == eid else e.dst, "update-neighbour")
        # each topic's events by relevance, sorted once per question (stable: ties stay in conversation order)
        by_relevance: dict[str, list[str]] = {}
        for eid, origin in list(seeds.items()):
            if origin != "dense+sparse":
                continue
            topic = graph.events[eid].topic_id
            if not topic:
                continue
            near = by_relevance.get(topic)
            if near is None:
                near = by_relevance[topic] = sorted(graph.by_topic.get(topic, []), key=lambda x: -relevance.get(x, 0.0))
            for x in list(islice((x for x in near if x not in seeds), s.hier_per_seed)):
                seeds.setdefault(x, "hierarchy")
        return seeds

    def _rank_events(self, graph: Graph, shape: QueryShape, seeds: dict[str, str], relevance: dict[str, float],
                     as_of: str | None) -> list[tuple[EventNode, float]]:
        people = set(shape.people)
        scored = []
        for eid in seeds:
            ev = graph.events[eid]
            score = relevance.get(eid, 0.0)
            if people and ev.subject in people:
                score += 0.05
            if ev.facet and any(ev.facet == f or (f.endswith(":*") and ev.facet.startswith(f[:-1])) for f in shape.facets):
                score += 0.1
            score += 0.05 * ev.validity_at(as_of)
            if shape.wh == "why" and any(e.label in ("causes", "enables", "prevents") for e in graph.into.get(eid, [])):
                score += 0.1
            scored.append((ev, round(score, 6)))
        scored.sort(key=lambda x: (-x[1], x[0].seq, x[0].id))
        return scored

    def _choose(self, graph: Graph, ranked: Sequence[tuple[EventNode, float]], shape: QueryShape,
                relevance: Mapping[str, float], answer: Answer, question: str, as_of: str | None, readers: Readers,
                best_cos: float) -> Answer:
        """The answer read from the sentence the learned model prefers among the best candidates
        (`tracecli.query.choose`), or the rule step's own when it prefers that one; an abstention and the valid end of
        a revision chain stay as they are."""
        if answer.abstained or not answer.event_ids or answer.event_ids[0] not in graph.events or not ranked \
                or not replaceable(answer.support) or not fitted_for(question):
            return answer
        learned = self.settings.learned_choice and "choice" not in self.settings.ablate
        if not learned and self.choice_log is None:
            return answer
        proposal = graph.events[answer.event_ids[0]]
        rows = candidate_rows(graph, shape, ranked, relevance, proposal, question, as_of, readers.between,
                              readers.phrase_sim)
        flags = flags_of(shape, question, as_of, answer.support)
        if self.choice_log is not None:
            self.choice_log.append((rows, flags))
        picked = choose_stating(rows, flags) if learned else None
        if picked is None or picked[0].event.id == proposal.id:
            return answer
        chosen = read_event(graph, picked[0].event, shape, best_cos, question, self.settings, as_of)
        if restates(picked[0].event, chosen, answer) or states_asked_code(shape, question, answer, chosen):
            return answer
        chosen.confidence = round(picked[1], 3)
        chosen.proposed = proposal.id
        return chosen

    def _readers(self, scope: _Scope, qvec: np.ndarray) -> Readers:
        """Sentence-vs-question and asked-noun-vs-value similarity for the answer step."""
        assert scope.vectors is not None
        vectors = scope.vectors

        def sentence_sim(events: Sequence[EventNode]) -> list[float]:
            return (vectors.matrix(list(events)) @ qvec).tolist() if events else []

        cache = self._short_vecs

        def value_fit(phrase: str, values: Sequence[str]) -> list[float]:
            if not values:
                return []
            # asked phrases and candidate values recur from question to question: embed each short text once
            todo = [t for t in dict.fromkeys([phrase, *values]) if t not in cache]
            if todo:
                if len(cache) > 50_000:
                    cache.clear()
                vecs = np.asarray(self.embedder.embed_batch(todo), dtype=np.float32)
                vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
                cache.update(zip(todo, vecs))
            q = cache[phrase]
            return [float(cache[v] @ q) for v in values]

        def between(event: EventNode, others: Sequence[EventNode]) -> list[float]:
            if not others:
                return []
            m = vectors.matrix([event, *others])
            return (m[1:] @ m[0]).tolist()

        phrases = self._phrase_vecs

        def phrase_sim(phrase: str, events: Sequence[EventNode]) -> list[float]:
            if not events:
                return []
            if phrase not in phrases:
                # embedded on its own and kept apart from `value_fit`'s texts: a batch's make-up moves vectors in
                # their last digits, and the values' vectors must not depend on which phrases came first
                if len(phrases) > 10_000:
                    phrases.clear()
                vec = np.asarray(self.embedder.embed_batch([phrase]), dtype=np.float32)[0]
                phrases[phrase] = vec / max(float(np.linalg.norm(vec)), 1e-9)
            return (vectors.matrix(list(events)) @ phrases[phrase]).tolist()

        return Readers(sentence_sim, value_fit, between, phrase_sim)

    def _rerank_sentences(self, scope: _Scope, qvec: np.ndarray, ranked: list[tuple[EventNode, float]],
                          shape: QueryShape, top: int = 16) -> list[tuple[EventNode, float]]:
        """Re-score the best events by their own sentence's similarity to the question.

        Event relevance comes from the message's note vector, so every sentence of
        a message ties; the candidate sentences' own vectors (cached per event,
        `tracecli.query.vectors`) separate the one that answers from its neighbours.
        """
        head = ranked[:top]
        if not head:
            return ranked
        rescored = list(zip([ev for ev, _ in head], self._match(scope, qvec, head)))
        people = set(shape.people)
        if people and self.settings.person_boost:
            # the named person's own statements first: a sentence about them by someone else, or another
            # person's sentence that happens to be close, says less about what they stated
            rescored = [(ev, round(sc + self.settings.person_boost * (ev.subject in people), 6)) for ev, sc in rescored]
        rescored.sort(key=lambda x: (-x[1], x[0].seq, x[0].id))
        return rescored + ranked[top:]

    def _match(self, scope: _Scope, qvec: np.ndarray, scored: Sequence[tuple[EventNode, float]]) -> list[float]:
        """How well each event's own sentence answers the question: 0.6 · its sentence's cosine to the question
        + 0.4 · the score it came with."""
        assert scope.vectors is not None
        sims = (scope.vectors.matrix([ev for ev, _ in scored]) @ qvec).tolist()
        return [round(0.6 * sim + 0.4 * score, 6) for (_, score), sim in zip(scored, sims)]

    # -- context (Eq. 21, 22) ------------------------------------------------------------
    def _wiki(self, scope: _Scope) -> _WikiIndex:
        """The scope's wiki index, read on first use (claims, pages and trajectories are read once per scope)."""
        if scope.wiki is None:
            scope.wiki = _WikiIndex.load(self.store, scope.conversation_ids)
        return scope.wiki

    def _routed_claims(self, scope: _Scope, shape: QueryShape, question: str, qvec: np.ndarray, as_of: str | None,
                       note_cos: dict[int, float], avec: np.ndarray | None = None) -> list[tuple[ClaimRow, float]]:
        """TrajWiki's query routing: the pages for the question (dense + FTS fused, `route_pages`, plus the entity
        pages of the people it names), expanded into the claims of their trajectories that hold at the asked time
        (now, or as of the date), best first. When the question names people, only their claims are taken (a page's
        trajectory may hold others').

        A claim is scored by how well its own statement answers: the cosine of `avec` (the question as messages
        are ranked by) to the sentence of the event the claim was made from, or, for a claim without one, the
        cosine to the message it rests on. A message's cosine ties all its sentences, so it cannot tell the one
        claim that answers from its neighbours."""
        wiki = self._wiki(scope)
        if not wiki.claims:
            return []
        pages = [pid for cid in scope.conversation_ids
                 for pid, _ in route_pages(self.store, cid, question, qvec, k=self.settings.route_pages)]
        pages += [pid for person in shape.people for pid in wiki.entity_pages.get(person, [])]
        seen: set[str] = set()
        named = set(shape.people)
        out: list[tuple[ClaimRow, float]] = []
        for tid in dict.fromkeys(t for pid in pages for t in wiki.page_trajectories.get(pid, [])):
            for claim in wiki.by_trajectory.get(tid, []):
                if claim.id in seen or not claim.holds_at(as_of) or (named and claim.subject not in named):
                    continue
                seen.add(claim.id)
                rel = max((note_cos.get(wiki.message_note.get(m, -1), 0.0) for m in claim.message_ids), default=0.0)
                out.append((claim, rel))
        own = [(i, scope.graph.events[c.event_id]) for i, (c, _) in enumerate(out)
               if avec is not None and c.event_id in scope.graph.events]
        if own and scope.vectors is not None:
            sims = (scope.vectors.matrix([ev for _, ev in own]) @ avec).tolist()
            for (i, _), sim in zip(own, sims):
                out[i] = (out[i][0], round(sim, 6))
        out.sort(key=lambda cs: (-cs[1], cs[0].id))
        return out

    def _claim_section(self, routed: Sequence[tuple[ClaimRow, float]], cited_msgs: set[str],
                       budget: int) -> list[tuple[ContextItem, ClaimRow]]:
        """The routed claims that enter the context, in a share of the budget of their own (TrajWiki §3.3: compact,
        source-grounded claims ranked beside the retrieved notes), best first; `cited_msgs` gains their messages.

        A claim needs its own statement's score (`_routed_claims`) at least `claim_floor`, a message not yet
        cited, and at most `claims_per_day` claims are taken from one day's messages: a question whose evidence
        lies in several sessions (multi-hop) gets one claim from each rather than several near-duplicates of one."""
        s = self.settings
        out: list[tuple[ContextItem, ClaimRow]] = []
        used = 0
        per_day: dict[str, int] = {}
        texts: set[str] = set()
        for claim, score in routed:
            if score < s.claim_floor:
                break  # best first: the rest score lower
            day = (claim.said_at or "")[:10]
            if set(claim.message_ids) <= cited_msgs or (day and per_day.get(day, 0) >= s.claims_per_day):
                continue
            item = self._claim_item(claim, score)
            cost = count_tokens(item.text)
            if used + cost > budget or item.text in texts:
                continue
            texts.add(item.text)
            out.append((item, claim))
            used += cost
            per_day[day] = per_day.get(day, 0) + 1
            cited_msgs.update(claim.message_ids)
        return out

    def _claim_item(self, claim: ClaimRow, score: float) -> ContextItem:
        refs = [qualified_ref(claim.conversation_id, r) if len(self._scope_ids) > 1 else r for r in claim.refs]
        when = f"[{claim.said_at[:10]}] " if claim.said_at else ""
        return ContextItem("claim", when + claim.text, refs, round(score, 6))

    def _context(self, scope: _Scope, shape: QueryShape, answer: Answer, paths: list[Path], hits: Sequence[NoteHit],
                 budget: int, as_of: str | None, relevance: dict[str, float],
                 question: str = "", routed: Sequence[tuple[ClaimRow, float]] = ()) -> tuple[list[ContextItem], list[PathOut]]:
        """C_note and C_path under the budget (Eq. 21, 22), most useful first.

        The routed claims that answer best lead the note section in a share of the budget of their own
        (`_claim_section`, taken from the paths' share). The note section follows the fused note ranking; where a note's message was
        distilled into events, the event of the sentence that matches the question
        stands in for the whole message (same message cited, fewer words, with its
        validity marker). Budget left unused by notes goes to paths.
        """
        s = self.settings
        graph = scope.view(s.ablate)
        no_paths = bool({"paths", "graph"} & s.ablate)
        no_claims = bool({"wiki", "graph"} & s.ablate)  # flat evidence has no wiki lifecycle either
        b_note = int(budget * s.note_share)
        b_path = budget - b_note
        qwords = set(content_words(question))
        claims = None if no_claims else self._wiki(scope).by_message
        key = (as_of, graph is scope.flat)
        outdated_notes = scope.outdated.get(key)
        if outdated_notes is None:
            if len(scope.outdated) >= 64:
                scope.outdated.clear()
            outdated_notes = scope.outdated[key] = self._outdated_notes(graph, as_of)
        answer_path: Path | None = None
        if answer.event_ids and answer.event_ids[0] in graph.events and not no_paths:
            answer_path = _answer_path(graph, answer.event_ids[0], as_of)
            score_path(graph, answer_path, relevance, s, as_of)
        # the rule step's sentence, when the learned choice answered from another: the two disagree, so the reader
        # (and an LLM) sees both
        proposed_path: Path | None = None
        if answer_path is not None and answer.proposed and answer.proposed in graph.events \
                and answer.proposed not in answer_path.event_ids:
            proposed_path = _answer_path(graph, answer.proposed, as_of)
            score_path(graph, proposed_path, relevance, s, as_of)
        cited: set[str] = {eid for p in (answer_path, proposed_path) if p for eid in p.event_ids}
        cited_msgs = {m for eid in cited for m in graph.events[eid].message_ids}
        units: list[tuple[ContextItem, Path | None]] = []
        shown: set[str] = set()  # item texts already in the context
        used_note = 0
        for item, claim in self._claim_section(routed, cited_msgs, int(budget * s.claim_share)):
            shown.add(item.text)
            units.append((item, None))
            b_path -= count_tokens(item.text)  # the claims' share comes out of the paths' (notes keep theirs)
            if claim.event_id:
                cited.add(claim.event_id)  # no path item repeats the claim's own sentence
        for hit in hits:
            if hit.message_id in cited_msgs:
                continue
            ref = hit.source_ref or hit.message_id
            if len(self._scope_ids) > 1:
                ref = qualified_ref(hit.conversation_id, ref)
            note_text = f"[OUTDATED] {hit.text}" if hit.rowid in outdated_notes else hit.text
            if as_of is not None and hit.timestamp and hit.timestamp > as_of:
                note_text = f"[NOT YET] {hit.text}"  # said after the as-of date: unknown then, not superseded
            ev = _best_sentence([graph.events[e] for e in graph.by_note.get(hit.rowid, [])], qwords, scope.quote_words)
            item: ContextItem
            path: Path | None = None
            if ev is not None and ev.id not in cited and not no_paths:
                path = Path([Step(ev.id)], [])
                score_path(graph, path, relevance, s, as_of)
                text = render_path(graph, path, as_of)
                if count_tokens(text) < 0.8 * count_tokens(note_text):
                    item = ContextItem("path", text, list(ev.source_refs), round(path.score, 6))
                else:
                    path = None
            if path is None:
                item = ContextItem("note", note_text, [ref], round(hit.score, 6))
                claim = None if claims is None else _claim_text(claims, hit, qwords, as_of)
                if claim is not None and count_tokens(claim) <= count_tokens(note_text):
                    item = ContextItem("claim", claim, [ref], round(hit.score, 6))
            cost = count_tokens(item.text)
            if used_note + cost > b_note or item.text in shown:
                continue  # two events of one sentence (two frames) render the same item: keep it once
            shown.add(item.text)
            units.append((item, path))
            used_note += cost
            cited_msgs.add(hit.message_id)
            if path is not None:
                cited.update(path.event_ids)
        b_path += max(0, b_note - used_note)  # Eq. 21: freed note budget goes to paths
        chosen: list[Path] = [p for p in (answer_path, proposed_path) if p]
        walked: set[frozenset[str]] = set()  # the messages each chosen path rests on
        for p in [] if no_paths else paths:
            if len(p.event_ids) < 2 or set(p.event_ids) <= cited:
                continue
            msgs = frozenset(m for eid in p.event_ids for m in graph.events[eid].message_ids)
            if len(msgs) < 2 or msgs in walked:
                continue  # a walk inside one message (between the frames of one sentence) or one already shown
            walked.add(msgs)
            chosen.append(p)
            cited.update(p.event_ids)
            if len(chosen) >= 12:
                break
        extra: list[tuple[ContextItem, Path]] = []
        used_path = 0
        for p in chosen:
            refs = list(dict.fromkeys(r for eid in p.event_ids for r in graph.events[eid].source_refs))
            if len(refs) > 3:
                continue  # an item must rest on precise messages, not a whole session
            text = render_path(graph, p, as_of)
            cost = count_tokens(text)
            if used_path + cost > b_path or text in shown:
                continue
            shown.add(text)
            extra.append((ContextItem("path", text, refs, round(p.score, 6)), p))
            used_path += cost
        # Most useful first: the answer's path, then the note section, with graph paths every third item.
        ordered: list[tuple[ContextItem, Path | None]] = []
        for first in (answer_path, proposed_path):
            if extra and first is not None and extra[0][1] is first:
                ordered.append(extra.pop(0))
        while units or extra:
            ordered.extend(units[:2])
            units = units[2:]
            if extra:
                ordered.append(extra.pop(0))
        context = [item for item, _ in ordered]
        outs = [_path_out(graph, p, as_of, answer=p is answer_path) for item, p in ordered if p is not None]
        return context, outs

    def _outdated_notes(self, graph: Graph, as_of: str | None) -> set[int]:
        out = set()
        for rowid, eids in graph.by_note.items():
            faceted = [graph.events[e] for e in eids if graph.events[e].facet]
            if faceted and all(ev.validity_at(as_of) == 0.0 and not ev.said_after(as_of) for ev in faceted):
                out.add(rowid)
        return out


def _may_replace(shape: QueryShape, question: str, own: EventNode, other: EventNode) -> bool:
    """May a better-scored candidate replace the answer step's sentence? Not for "before X" (the answer step
    chose from what was said before X), and for the state now or at a date only with a statement no older than
    the one it replaces (an older sentence is what a revision left behind)."""
    if shape.back_when is not None or asks_before(question):
        return False
    if shape.wants_current or shape.as_of is not None:
        return (other.seq, other.sentence_idx) >= (own.seq, own.sentence_idx)
    return True


def _claim_text(claims: dict[str, list[tuple[str, str, frozenset[str]]]], hit: NoteHit, qwords: set[str],
                as_of: str | None) -> str | None:
    """The message's claims (TrajWiki's compact, source-grounded restatements) as one dated line, or None.

    At most two claims, those sharing most words with the question; a claim the wiki deprecated is marked
    [OUTDATED] when the question asks about now. (As of a date, the claim's status at that date is not
    kept, so no marker is shown — the note's own marker logic does not apply to it.)"""
    rows = claims.get(hit.message_id)
    if not rows:
        return None
    ranked = sorted(rows, key=lambda r: -len(qwords & r[2]))[:2]
    texts = [("[OUTDATED] " if status == "deprecated" and as_of is None else "") + text for text, status, _ in ranked]
    when = f"[{hit.timestamp[:10]}] " if hit.timestamp else ""
    return when + " ".join(texts)


def _one_per_sentence(ranked: Sequence[tuple[EventNode, float]], limit: int) -> list[str]:
    """The best-ranked events, one per sentence (a sentence that states several frames seeds one path walk)."""
    seen: set[tuple[str, int, int]] = set()
    out: list[str] = []
    for ev, _ in ranked:
        key = (ev.session_id, ev.seq, ev.sentence_idx)
        if key in seen:
            continue
        seen.add(key)
        out.append(ev.id)
        if len(out) >= limit:
            break
    return out


def _best_sentence(events: Sequence[EventNode], qwords: set[str],
                   cache: dict[str, frozenset[str]] | None = None) -> EventNode | None:
    """The event of a message whose sentence shares the most words with the question."""
    if not events:
        return None
    cache = {} if cache is None else cache

    def shared(ev: EventNode) -> int:
        found = cache.get(ev.id)
        if found is None:
            found = cache[ev.id] = frozenset(content_words(ev.quote))
        return len(qwords & found)

    return max(events, key=lambda ev: (shared(ev), -ev.sentence_idx, ev.id))


def _answer_path(graph: Graph, event_id: str, as_of: str | None) -> Path:
    """The answer event, preceded by the version it superseded (so the outdated one shows as such)."""
    ev = graph.events[event_id]
    older = [graph.events[e.dst] for e in graph.out.get(ev.id, []) if e.label == "updates"]
    if older:
        prev = max(older, key=lambda x: (x.seq, x.sentence_idx))
        edge = next(e for e in graph.out[ev.id] if e.label == "updates" and e.dst == prev.id)
        return Path([Step(prev.id, "updated by"), Step(ev.id)], [edge], score=1.0,
                    signals={"ns": 0.0, "pc": edge.confidence, "tc": 1.0, "uv": 0.0})
    return Path([Step(ev.id)], [], score=1.0, signals={"ns": 0.0, "pc": 1.0, "tc": 1.0, "uv": ev.validity_at(as_of)})


def marker(graph: Graph, ev: EventNode, as_of: str | None) -> str:
    if any(ev.id in pair for pair in graph.conflicts):
        return "conflict"
    return ev.marker(as_of)


def render_path(graph: Graph, path: Path, as_of: str | None) -> str:
    """'Alice is moving to Oslo (2024-01-08) [OUTDATED until 2024-03-12] —updated by→ Alice is moving to Porto (2024-03-12) [valid]'."""
    parts = []
    for step in path.steps:
        ev = graph.events[step.event_id]
        mark = marker(graph, ev, as_of)
        tag = "[OUTDATED" + (f" until {ev.valid_until[:10]}" if ev.valid_until else "") + "]" if mark == "outdated" else f"[{mark}]"
        when = f" ({ev.time_anchor[:10]})" if ev.time_anchor else ""
        parts.append(f"{short_text(ev)}{when} {tag}")
        if step.relation_to_next:
            parts.append(f"—{step.relation_to_next}→")
    return " ".join(parts)


def _path_out(graph: Graph, path: Path, as_of: str | None, answer: bool = False) -> PathOut:
    steps = []
    for step in path.steps:
        ev = graph.events[step.event_id]
        steps.append(StepOut(ev.id, short_text(ev), ev.time_anchor, marker(graph, ev, as_of), ev.valid_until, step.relation_to_next))
    return PathOut(round(path.score, 6), dict(path.signals), steps, answer)


def _as_datetime(value: str | dt.datetime | None) -> dt.datetime | None:
    if value is None or isinstance(value, dt.datetime):
        return value
    try:
        return parse_user_date(value)
    except ValueError as exc:
        raise BadInput(f"--as-of: {exc}") from None


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


def _forgotten_sources(store: Store, result: AskResult, conversation_ids: Sequence[str]) -> list[str]:
    """The message refs an answer cites (its sources and context items) that no message of its conversations has now."""
    cids = set(conversation_ids)
    wanted: dict[str, str] = {}  # the ref as written → the id or source ref to look for
    for ref in dict.fromkeys([*result.source_refs, *(r for item in result.context for r in item.source_refs)]):
        if ref.startswith(("cl_", "wp_", "tr_", "sn_")):
            continue  # claims, pages, trajectories, snapshots: not messages
        owner = next((c for c in cids if ref.startswith(f"{c}:")), None)  # "conversation:ref" in a multi-conversation answer
        wanted[ref] = ref[len(owner) + 1:] if owner else ref
    if not wanted or not cids:
        return []
    looked = list(dict.fromkeys(wanted.values()))
    found: set[str] = set()
    for mid, sref in store.execute(
            f"SELECT id, source_ref FROM messages WHERE conversation_id IN ({placeholders(list(cids))}) "
            f"AND (id IN ({placeholders(looked)}) OR source_ref IN ({placeholders(looked)}))", [*cids, *looked, *looked]):
        found.update((mid, sref))
    return [ref for ref, local in wanted.items() if local not in found]


def save_answer(store: Store, result: AskResult, conversation_ids: Sequence[str]) -> None:
    """Store the answer and its context items (what `trace` replays)."""
    # every field is str-keyed dicts, lists and scalars: asdict alone gives the JSON `to_jsonable` would
    payload = asdict(result)
    with store.transaction():
        store.execute(
            "INSERT INTO answers(id, conversation_id, question, answer, abstained, plan, as_of, payload, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?)",
            (result.answer_id, ",".join(conversation_ids), result.question, result.answer, int(result.abstained),
             result.plan, result.as_of, dumps(payload), utc_now()),
        )
        store.conn.executemany(
            "INSERT INTO answer_items(answer_id, rank, kind, ref_id, text, score, source_refs) VALUES (?,?,?,?,?,?,?)",
            [(result.answer_id, i, it.kind, None, it.text, it.score, dumps(it.source_refs)) for i, it in enumerate(result.context)],
        )


__all__ = ["Asker", "AskResult", "ContextItem", "PathOut", "StepOut", "render_path", "short_text", "NOT_ENOUGH",
           "newest_successor", "PLAN_TEXT", "field"]
