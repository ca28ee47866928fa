"""Every knob of query processing, in one place (TRACE §II-E/F; TrajWiki §3.3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tracecli.errors import BadInput

# Relation discounts d(ℓ) of Eq. 18: how much a hop along each label keeps of
# the path's confidence. Evolution edges are informative for state questions,
# `before` is weak (pure chronology), structural hops are weakest.
RELATION_DISCOUNT: dict[str, float] = {
    "updates": 0.95,
    "causes": 0.9,
    "enables": 0.85,
    "prevents": 0.85,
    "contradicts": 0.7,
    "before": 0.6,
    "member_of": 0.5,
    "next": 0.5,
}


#: what `--ablate` can switch off: the wiki's claims in the context, graph paths in the context, the frame answer
#: step, the graph itself (no edges, no revision validity, no wiki: the same reader over flat evidence), the learned
#: choice of the answer's sentence (`tracecli.query.choose`: the rule step's own sentence answers)
ABLATIONS = ("wiki", "paths", "frames", "graph", "choice")


@dataclass
class AskSettings:
    """Documented defaults; all are configuration."""

    # seeds (Eq. 13, 14)
    k_dense: int = 40  # notes from sqlite-vec
    k_sparse: int = 40  # notes from FTS5/BM25
    rrf_k: int = 60  # reciprocal rank fusion constant
    seed_notes: int = 12  # top fused notes whose events seed V0
    hier_per_seed: int = 2  # events added per seed from the same topic (V_hier)
    # traversal (Eq. 15)
    max_depth: int = 3  # edges per path
    fan_out: int = 6  # edges followed per node and direction
    max_paths: int = 200  # paths kept before scoring
    # scoring (Eq. 16-20)
    alpha: float = 0.4  # NS, neural relevance
    beta: float = 0.3  # PC, path confidence
    gamma: float = 0.15  # TC, temporal consistency
    delta: float = 0.15  # UV, update validity
    discounts: dict[str, float] = field(default_factory=lambda: dict(RELATION_DISCOUNT))
    # context (Eq. 21, 22); tokens are whitespace-separated words
    budget: int = 400
    note_share: float = 0.5  # B_note = note_share * budget; the rest is B_path
    # the Memory Wiki in the context (TrajWiki §3.3): pages routed per conversation; the routed claims, scored by
    # their own sentence's cosine to the question, take up to `claim_share` of the budget (out of the paths' share),
    # each scoring at least `claim_floor`, at most `claims_per_day` from one day's messages (0 claim_share: none).
    # LoCoMo dev (tuned on, 300 words): 0.754 / multi-hop 0.480 without them → 0.771 / 0.538; 0.05 or 0.2 lose overall
    # recall (0.748 / 0.745) but keep some multi-hop gain (README, Quality)
    route_pages: int = 6
    claim_floor: float = 0.3
    claim_share: float = 0.1
    claims_per_day: int = 1
    # answering
    # a sentence-level answer may be replaced by a better-scored candidate (candidates.py); off by default: on five
    # dev sets it changed valid answers 193 → 192 and stale ones 57 → 60 (README, "The evidence chooses the answer")
    choose_by_evidence: bool = False
    # messages and sentences are ranked by the question put to the one participant it names ("What is Noor's
    # job?" → "What is your job?"): people do not name themselves, so the name pulls the question towards messages
    # that mention the person rather than the ones in which they state their own facts. Retrieval, abstention and
    # wiki routing keep the question as asked. A closing "before X" clause is left out of what is ranked.
    address_named: bool = True
    # added to the re-rank score of the named person's own statements: 0.05 until session 8; on the twelve dev sets
    # A–H, J, K, L, N (1,326 questions) 0.1 / 0.15 / 0.2 / 0.3 answered +12 / +16 / +18 / +17 more (net), with +1 /
    # +1 / +2 / +3 more stale
    person_boost: float = 0.2
    # asked for the state now, a later sentence of the same person on the same topic (its sentence at least
    # `restate_topic` close to the chosen one's) that matches the question within `restate_margin` of the best is
    # that fact's newer version. On the eight dev sets (A–H) 0.2 / 0.4 gave 403 valid / 76 stale answers, against
    # 402 / 86 without it and 402 / 83 with 0.12 / 0.5
    restate_margin: float = 0.2
    restate_topic: float = 0.4
    # a later same-topic sentence that presents something as new ("now", "instead", "new") counts within this wider
    # margin (A–H 434 / 71 → 436 / 68, all of it on A; J and K unchanged; no answer lost)
    restate_novel_margin: float = 0.3
    # the same rule after a frame answer to a question about the state now ("… now?"): on A–H 406 / 78 → 411 / 76
    # (for every current-state question it cost never-revised answers: 407 / 76)
    frame_restate: bool = True
    # a later sentence that names the frame's value again, presents nothing as new and states no other value of its
    # kind refers to it: it is not a restatement with a new value (A–H, J, K rebuilt: +1 / −0; the same check in the
    # sentence fallback's restatement rule was +1 / −3 and is not used)
    restate_new_value: bool = True
    # a sentence answer to a what/which question that names nothing specific continues into the next sentence of its
    # message that does ("… I never remember mine. 5802."); not for a date asked for (A–H, J, K rebuilt: +6 / −0)
    value_follows: bool = True
    # added to a frame's score when it is said as new ("now", "instead", "new") and the state now is asked (A–H, J,
    # K: +4 / −0 at 0.08, the one value tried)
    novelty_bonus: float = 0.08
    # the answer's value read again from its sentence (`tracecli.query.span`): widened to the noun phrase it is cut
    # from, replaced by its sentence when it cannot answer what is asked, a bare retraction given as its sentence, a
    # manner ("How does … get to work?") answered by the sentence. Twelve dev sets (A–H, J, K, L, N; 1,326
    # questions), each against all three off: widen, doubt and retraction together +25 / −0 valid (6 wrong answers
    # that were a cut-short old value, "americano" of "iced americano", now read in full and count as stale);
    # manner +2 / −0 (one more stale)
    span_widen: bool = True
    span_doubt: bool = True
    span_retraction: bool = True
    span_manner: bool = True
    # a best sentence that asks the person the user's question names about themselves ("what's your shoe size btw")
    # is answered by their reply, also when the parse made it an event of the one asking (twelve dev sets: +4 / −0)
    reply_to_named: bool = True
    # a best sentence in which the person the question names asks the other about the same thing ("what's your blood
    # type?") is answered by the first statement naming something that person makes within three messages after
    # ("I'm O negative, they chase me down the street") (`answer._own_answer_after`)
    asker_states: bool = True
    # an as-of question whose typed facet the named person states only after that date is answered by a frame
    # said by then when there is one, else abstains (twelve dev sets: +2 / −0)
    known_later_frame: bool = True
    # … and with no such frame, the sentence fallback answers when one of the three best sentences said by then names
    # a value of the asked type (a place for "Where …?"), else it abstains (eighteen dev sets: +1 / −0; Z, dev since
    # session 12: +1 / −0; reading every such question by sentences instead: +6 on dev, but "as of a date before
    # the cat existed" was then answered with an unrelated sentence)
    later_only_sentences: bool = True
    # a later message of the same person naming the answer's value again while telling a change answers instead
    # (`answer.said_over`), not after a chain answer, the change told by the sentence naming the value or the one
    # naming what came instead: on the twelve dev sets +11 / −2 valid, 11 fewer stale
    said_over: bool = True
    # the answer's sentence also states a fact revised since (another event of the sentence has a newer version),
    # and the answer names that fact's value or the question asks its predicate ("I sing tenor in the choir now,
    # we're learning a Fauré piece" for "Which part does Ivo sing?" after "moved me from tenor to baritone"): the
    # newer version answers (`answer._sibling_revised`)
    sibling_revised: bool = True
    # asked for the state now, a frame or facet answer gives way to the sentence that answers the question best when
    # the same person said it later, naming something specific and not the answer's value (`answer._top_said_later`;
    # sixteen dev sets 984 / 137 → 994 / 132; at an as-of date it answered the sample conversations' as-of questions
    # with later statements of other facts, so it is not used there)
    top_later: bool = True
    # "before X" is never answered by what came after X: along a chain, X's statements from the first on and only a
    # value said before X first was; a typed facet's value said after X is not the answer (twelve dev sets: +7 / −1
    # valid, 5 fewer stale)
    before_first: bool = True
    # a frame refusal ("what Noor painted is a thing, not a colour") gives way when one of the three best sentences
    # holds a value of the asked type (twelve dev sets: +1 / −0)
    refusal_typed: bool = True
    # an occupation question is answered by a frame only when it holds a role (with the question-side change that a
    # noun the question word determines asks for a job only in its first sense — "What sport …?" is no job
    # question — twelve dev sets 733 / 98 → 735 / 97)
    roles_only: bool = True
    # load spaCy on a second thread while the first question is embedded and its evidence retrieved (offline mode)
    preload_nlp: bool = True
    # a restatement of a sentence that holds a value of the asked type (a place for "where" …) must hold one too
    restate_typed: bool = True
    # the same-topic restatement rule at an as-of date too (later sentences said by then): on A–H's as-of
    # questions 86 valid / 13 stale → 88 / 10
    restate_as_of: bool = True
    # a closing event clause ("… when her car failed its MOT?") is left out of what is ranked; on B's as-of
    # questions, most of them phrased so, 4 → 6 of 22
    drop_event_clause: bool = True
    # a "before X" question with no revision chain leading back from X is answered again by the same reader over the
    # sentences as flat evidence (no revision edges or validity; the context keeps the graph's paths and claims): on
    # A–H's before-X questions 39 valid / 12 stale → 44 / 9 (reading every before-question flat gave 49 / 9 but lost
    # chain answers such as "nurse" before "paramedic"); the flat reader had been ahead on held-out F, G and J too
    before_flat: bool = True
    # the noun a what/which question asks for types its answer (`answer.asked_labels`, WordNet): the typed
    # preference below and the reduction of a sentence to a person or a sum use it
    typed_focus: bool = True
    # the sentence fallback moves up the first of the `typed_window` best sentences, within `typed_margin` of the
    # best, that holds a value of the asked type (0.15, or 8 sentences, answered D's questions worse)
    typed_window: int = 5
    # the sentence fallback puts sentences that only muse or ask ("if I ever moved south it would be Bristol",
    # `answer._muses`) after one that states, when that one is within `unhedged_margin` of the best (with "grow up"
    # read as asking for a hometown, sixteen dev sets +4 / −0)
    unhedged_first: bool = True
    unhedged_margin: float = 0.1
    typed_margin: float = 0.08
    # asked "Who …?" when the best sentence names no one, a sentence naming someone moves up from within this wider
    # margin (sixteen dev sets: +3 / −0 valid, one fewer stale; 0.25 gave +1 net and one more stale)
    who_margin: float = 0.15
    # the sentence the answer is read from is chosen among the answer step's best candidates by the learned model of
    # `tracecli.query.choose` (weights fitted on the dev sets only; a chain's answer is never replaced); off (or
    # `--ablate choice`): the rule answer step's own choice. Blind set Y: 50 / 11 → 54 / 10 valid / stale of 120
    # (W + X with the first model: 88 / 15 → 103 / 10 of 221)
    learned_choice: bool = True
    abstain_below: float = 0.30  # best evidence relevance (cosine) under which the offline answer abstains
    facet_confidence_floor: float = 0.5  # facet events below this confidence do not answer on their own
    # ablations (`ask --ablate`, `eval --ablate`): parts of the pipeline switched off, see ABLATIONS
    ablate: frozenset[str] = frozenset()


def check_ablations(parts: Sequence[str] | None) -> list[str]:
    """The distinct parts to switch off, in the order given; BadInput names an unknown one."""
    out = list(dict.fromkeys(parts or []))
    bad = [p for p in out if p not in ABLATIONS]
    if bad:
        raise BadInput(f"--ablate: {bad[0]!r} is not a part that can be switched off; choose from {', '.join(ABLATIONS)}")
    return out
