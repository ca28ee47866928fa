"""Revision constructions of English, declared as spaCy pattern data over lemmas and dependency arcs.

Two families:

* **retraction** — a statement that an earlier value no longer holds: "quit /
  left / sold / dropped / cancelled / gave up X", "stopped going to X", "pulled out of X", "X is off / over /
  cancelled", "done / finished with X",
  "X fell through", "X didn't work out", "X died / passed away", "X got adopted / stolen", "X cancelled on us",
  "let X lapse", "X closed down", "scratch / forget X", "no longer X", "not X anymore", "no more X";
* **substitution** — an old and a new value in one construction: "from X to Y",
  "Y instead of X", "replaced X with Y", "swapped / traded X for Y".

Each construction is one pattern over the parse, so it covers every way of
filling it ("I quit my job at the bank", "we had to quit the choir"), never a
phrase copied from a conversation. The word classes below are grammatical
categories of English verbs and adjectives; each says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tracecli.graph.frames import ARRIVING, is_hedged

#: verbs of ending, leaving or giving up something (Levin's "verbs of leaving" and "verbs of
#: abandonment / discarding", plus the common chat verbs of cancelling)
RETRACT_VERBS = ["quit", "leave", "sell", "drop", "cancel", "abandon", "ditch", "scrap", "dump", "bin", "lose", "end", "close",
                 "stop", "resign", "retire", "axe", "sack", "discontinue", "unsubscribe", "terminate", "call",
                 "give", "break", "move", "get", "return", "rehome"]
#: particles that turn the verbs above into verbs of ending ("give up", "call off", "break up", "move out", "move on from")
RETRACT_PARTICLES = {"give": ["up"], "call": ["off"], "break": ["up"], "move": ["out", "away", "on", "off"], "get": ["rid"]}
#: verbs that with "out of" mean withdrawing from something ("pull out of", "drop out of", "back out of")
WITHDRAW_VERBS = ["move", "pull", "drop", "back", "opt", "bow"]
#: verbs of ceasing an activity, with the activity as a gerund ("stopped going to X", "quit playing X")
CEASE_VERBS = ["stop", "quit", "cease"]
#: verbs of dismissing an idea, used as imperatives at the start of a sentence ("Forget Oslo", "Scratch that")
DISMISS_VERBS = ["forget", "scratch", "scrap", "ignore", "disregard", "cancel", "nix"]
#: verbs of ceasing to exist (Levin's "verbs of disappearance")
DEATH_VERBS = ["die", "perish", "vanish", "disappear", "expire"]
#: verbs of parting with a possession (Levin's "verbs of change of possession" that take a thing away from its
#: holder), in the passive with the thing as subject: "the kitten got adopted", "my bike was stolen"
PARTED_VERBS = ["adopt", "rehome", "steal", "repossess", "return", "refund", "confiscate"]
#: verbs of a plan, booking or membership ending of itself, with it (or its provider) as subject: "the caterer
#: cancelled on us", "the membership lapsed", "the café folded"
LAPSE_VERBS = ["cancel", "lapse", "expire", "fold"]
#: verbs of a business ending, with a particle: "the shop closed down", "the club shut down"
SHUTDOWN_VERBS = ["close", "shut"]
#: adjectives and participles of an ended state ("the trip is off", "the deal is dead")
ENDED_STATES = ["off", "over", "cancelled", "canceled", "dead", "done", "finished", "gone", "history", "scrapped",
                "ended", "postponed", "axed", "shelved"]
#: nouns of the suspended state in "on hold" / "on ice" (the idioms of putting something aside)
SUSPENDED = ["hold", "ice"]
#: verbs of exchanging one thing for another (Levin's "exchange verbs" and "verbs of replacing")
EXCHANGE_VERBS = ["swap", "trade", "exchange", "replace", "substitute", "switch", "change", "upgrade", "downgrade"]
#: verbs of changing or choosing: a value they introduce is a new state ("switched to", "went with")
CHANGE_VERBS = ["switch", "change", "move", "convert", "transfer", "upgrade", "downgrade", "opt", "settle", "choose",
                "pick", "decide", "replace", "become", "rename", "rebook", "reschedule", "postpone", "relocate",
                "join", "adopt", "start", "begin", "take"]

_NOUNISH = {"POS": {"IN": ["NOUN", "PROPN", "NUM", "ADJ", "X"]}}


def _pattern(*nodes: dict[str, Any]) -> list[dict[str, Any]]:
    return list(nodes)


def _dep_patterns() -> dict[str, list[list[dict[str, Any]]]]:
    """Dependency patterns by construction name; `old` / `new` name the value nodes."""
    verb = {"RIGHT_ID": "verb", "RIGHT_ATTRS": {"POS": {"IN": ["VERB", "AUX"]}}}
    return {
        # "I quit Barclays", "we had to quit the choir", "I gave up the allotment", "we sold the house"
        "retract": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": RETRACT_VERBS}, "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "dobj", **_NOUNISH}}),
            # passive: "the trip was cancelled", "my contract got terminated"
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": RETRACT_VERBS + DISMISS_VERBS}, "TAG": "VBN"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "nsubjpass"}}),
            # "I moved out of the flat", "I pulled out of the race", "she dropped out of the course": the
            # particle parsed as a preposition (the phrasal verbs of withdrawing)
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": WITHDRAW_VERBS}, "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "out", "RIGHT_ATTRS": {"LOWER": "out"}},
                     {"LEFT_ID": "out", "REL_OP": ">", "RIGHT_ID": "of", "RIGHT_ATTRS": {"LOWER": "of"}},
                     {"LEFT_ID": "of", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj"}}),
            # "I moved out of the flat", "I broke up with Sam": the value in a prepositional object
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": RETRACT_VERBS}, "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "prt", "RIGHT_ATTRS": {"DEP": "prt"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "prep", "RIGHT_ATTRS": {"LOWER": {"IN": ["of", "from", "with", "on"]}}},
                     {"LEFT_ID": "prep", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj"}}),
        ],
        # "I've stopped going to the Tuesday class", "I quit playing squash": the activity's object or place ends
        "retract~cease": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": CEASE_VERBS}, "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "doing", "RIGHT_ATTRS": {"DEP": {"IN": ["xcomp", "dobj"]}, "TAG": "VBG"}},
                     {"LEFT_ID": "doing", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "dobj", **_NOUNISH}}),
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": CEASE_VERBS}, "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "doing", "RIGHT_ATTRS": {"DEP": {"IN": ["xcomp", "dobj"]}, "TAG": "VBG"}},
                     {"LEFT_ID": "doing", "REL_OP": ">", "RIGHT_ID": "prep", "RIGHT_ATTRS": {"DEP": "prep", "LOWER": {"IN": ["to", "at", "in", "for", "with"]}}},
                     {"LEFT_ID": "prep", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj", **_NOUNISH}}),
        ],
        # "we've moved on from Gousto", with the particle parsed as an adverb
        "retract~move_on": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": "move", "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "on", "RIGHT_ATTRS": {"LOWER": "on", "DEP": "advmod"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "from", "RIGHT_ATTRS": {"LOWER": "from", "DEP": "prep"}},
                     {"LEFT_ID": "from", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj", **_NOUNISH}}),
        ],
        # "I'm done with Bayside", "finished with the gym", "through with giffgaff": a state of having ended
        # something, with it as the object of "with"
        "retract~done_with": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LOWER": {"IN": ["done", "finished", "through"]}}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "with", "RIGHT_ATTRS": {"LOWER": "with", "DEP": "prep"}},
                     {"LEFT_ID": "with", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj", **_NOUNISH}}),
        ],
        # phrasal verbs of leaving a post or a habit, each its own pattern (a name "retract~…" is read as "retract"):
        # "I've packed in five-a-side", "packed the darts in"
        "retract~pack_in": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": "pack", "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "in", "RIGHT_ATTRS": {"LOWER": "in", "DEP": "prep"}},
                     {"LEFT_ID": "in", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj", **_NOUNISH}}),
        ],
        "retract~pack_prt": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": "pack", "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "in", "RIGHT_ATTRS": {"LOWER": "in", "DEP": "prt"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "dobj", **_NOUNISH}}),
        ],
        # "I handed in my notice at X" (resigning)
        "retract~notice": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": ["hand", "give", "put"]}, "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "notice", "RIGHT_ATTRS": {"LEMMA": "notice", "DEP": "dobj"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "at", "RIGHT_ATTRS": {"LOWER": {"IN": ["at", "to"]}, "DEP": "prep"}},
                     {"LEFT_ID": "at", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj"}}),
        ],
        # "I stepped down as assistant coach", "stepped back from the committee"
        "retract~step_down": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": "step", "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "dir", "RIGHT_ATTRS": {"LOWER": {"IN": ["down", "back", "away", "aside"]}}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "as", "RIGHT_ATTRS": {"LOWER": {"IN": ["as", "from"]}, "DEP": "prep"}},
                     {"LEFT_ID": "as", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj"}}),
        ],
        # "they took me off ibuprofen", "I came off the pill", "the club moved me off the first team"
        "retract~off": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": ["take", "come", "move"]}, "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "off", "RIGHT_ATTRS": {"LOWER": "off", "DEP": "prep"}},
                     {"LEFT_ID": "off", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj", **_NOUNISH}}),
        ],
        # the idiom of ending a tie, "part ways / company": "I parted ways with my coach", "Sam and I parted ways"
        "retract~part_ways": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": "part", "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "ways", "RIGHT_ATTRS": {"LEMMA": {"IN": ["way", "company"]}, "DEP": "dobj"}},
                     {"LEFT_ID": "verb", "REL_OP": ">>", "RIGHT_ID": "with", "RIGHT_ATTRS": {"LOWER": "with", "DEP": "prep"}},
                     {"LEFT_ID": "with", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj", **_NOUNISH}}),
        ],
        # (a pattern of its own: patterns of one name are told apart by their number of nodes)
        "retract~part_ways_subject": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": "part", "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "ways", "RIGHT_ATTRS": {"LEMMA": {"IN": ["way", "company"]}, "DEP": "dobj"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "nsubj", **_NOUNISH}},
                     {"LEFT_ID": "old", "REL_OP": ">", "RIGHT_ID": "me", "RIGHT_ATTRS": {"DEP": "conj", "LOWER": {"IN": ["i", "me", "we"]}}}),
        ],
        # "X died", "X passed away", "X disappeared"
        "ended": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": DEATH_VERBS}}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "nsubj"}}),
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": "pass"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "prt", "RIGHT_ATTRS": {"LOWER": {"IN": ["away", "on"]}}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "nsubj"}}),
            # "the kitten got adopted", "my bike was stolen": a possession parted with
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": PARTED_VERBS}, "TAG": "VBN"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "nsubjpass", **_NOUNISH}}),
            # "the caterer cancelled on us", "my pool membership lapsed"
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": LAPSE_VERBS}, "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "nsubj", **_NOUNISH}}),
            # "X fell through", "X fell apart"
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": "fall"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "prt", "RIGHT_ATTRS": {"LOWER": {"IN": ["through", "apart"]}}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "nsubj"}}),
        ],
        # "the Lisbon job didn't work out": a plan that came to nothing (the one negated verb that ends something)
        "ended~not_work_out": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": "work", "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "prt", "RIGHT_ATTRS": {"LOWER": "out"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "neg", "RIGHT_ATTRS": {"DEP": "neg"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "nsubj", **_NOUNISH}}),
        ],
        # "the shop closed down", "the club shut down" (its own name: three nodes like "fell through" but another verb)
        "ended~shutdown": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": SHUTDOWN_VERBS}, "POS": "VERB"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "prt", "RIGHT_ATTRS": {"LOWER": "down"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "nsubj", **_NOUNISH}}),
        ],
        # "the Lisbon trip is off", "the wedding is cancelled" (read as "ended"; its own name tells its nodes apart
        # from the other three-node patterns above)
        "ended_state": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": "be"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "state",
                      "RIGHT_ATTRS": {"DEP": {"IN": ["acomp", "advmod", "prt", "attr", "prep"]}, "LOWER": {"IN": ENDED_STATES}}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "nsubj", **_NOUNISH}}),
        ],
        # "switched from X to Y", "moved from X to Y"
        "from_to": [
            _pattern(verb,
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "from", "RIGHT_ATTRS": {"LOWER": "from", "DEP": "prep"}},
                     {"LEFT_ID": "from", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "to", "RIGHT_ATTRS": {"LOWER": {"IN": ["to", "into"]}, "DEP": "prep"}},
                     {"LEFT_ID": "to", "REL_OP": ">", "RIGHT_ID": "new", "RIGHT_ATTRS": {"DEP": "pobj"}}),
            _pattern(verb,
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "from", "RIGHT_ATTRS": {"LOWER": "from", "DEP": "prep"}},
                     {"LEFT_ID": "from", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj"}},
                     {"LEFT_ID": "old", "REL_OP": ">", "RIGHT_ID": "to", "RIGHT_ATTRS": {"LOWER": {"IN": ["to", "into"]}, "DEP": "prep"}},
                     {"LEFT_ID": "to", "REL_OP": ">", "RIGHT_ID": "new", "RIGHT_ATTRS": {"DEP": "pobj"}}),
            # the to-phrase hung on the from-phrase itself
            _pattern(verb,
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "from", "RIGHT_ATTRS": {"LOWER": "from", "DEP": "prep"}},
                     {"LEFT_ID": "from", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "pobj"}},
                     {"LEFT_ID": "from", "REL_OP": ">", "RIGHT_ID": "to", "RIGHT_ATTRS": {"LOWER": {"IN": ["to", "into"]}, "DEP": "prep"}},
                     {"LEFT_ID": "to", "REL_OP": ">", "RIGHT_ID": "new", "RIGHT_ATTRS": {"DEP": "pobj"}}),
        ],
        # "we're having Y instead of X"
        "instead_of": [
            _pattern({"RIGHT_ID": "instead", "RIGHT_ATTRS": {"LOWER": "instead"}},
                     {"LEFT_ID": "instead", "REL_OP": ">", "RIGHT_ID": "of", "RIGHT_ATTRS": {"LOWER": "of"}},
                     {"LEFT_ID": "of", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": {"IN": ["pobj", "pcomp"]}}}),
            # the small parser's other reading: "tea instead of coffee" as a coordination
            _pattern({"RIGHT_ID": "new", "RIGHT_ATTRS": _NOUNISH},
                     {"LEFT_ID": "new", "REL_OP": ">", "RIGHT_ID": "of", "RIGHT_ATTRS": {"LOWER": "of", "DEP": "cc"}},
                     {"LEFT_ID": "of", "REL_OP": ">", "RIGHT_ID": "instead", "RIGHT_ATTRS": {"LOWER": "instead"}},
                     {"LEFT_ID": "new", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "conj"}}),
        ],
        # "of" read as the head of "instead" ("went with a guest room instead of the office"); its own name, as its
        # nodes come in another order than the first pattern's
        "instead_of~of": [
            _pattern({"RIGHT_ID": "of", "RIGHT_ATTRS": {"LOWER": "of"}},
                     {"LEFT_ID": "of", "REL_OP": ">", "RIGHT_ID": "instead", "RIGHT_ATTRS": {"LOWER": "instead"}},
                     {"LEFT_ID": "of", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": {"IN": ["pobj", "pcomp"]}}}),
        ],
        # "replaced X with Y", "swapped X for Y", "traded X for Y"
        "exchange": [
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": EXCHANGE_VERBS}}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "dobj"}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "prep", "RIGHT_ATTRS": {"LOWER": {"IN": ["for", "with"]}}},
                     {"LEFT_ID": "prep", "REL_OP": ">", "RIGHT_ID": "new", "RIGHT_ATTRS": {"DEP": "pobj"}}),
            _pattern({"RIGHT_ID": "verb", "RIGHT_ATTRS": {"LEMMA": {"IN": EXCHANGE_VERBS}}},
                     {"LEFT_ID": "verb", "REL_OP": ">", "RIGHT_ID": "old", "RIGHT_ATTRS": {"DEP": "dobj"}},
                     {"LEFT_ID": "old", "REL_OP": ">", "RIGHT_ID": "prep", "RIGHT_ATTRS": {"LOWER": {"IN": ["for", "with"]}}},
                     {"LEFT_ID": "prep", "REL_OP": ">", "RIGHT_ID": "new", "RIGHT_ATTRS": {"DEP": "pobj"}}),
        ],
    }


def _token_patterns() -> dict[str, list[list[dict[str, Any]]]]:
    """Token patterns for what the small parser often mis-attaches."""
    return {
        # "Forget Oslo, ...", "Scratch the Lisbon idea": an imperative that opens the sentence
        "dismiss": [[{"LEMMA": {"IN": DISMISS_VERBS}, "IS_SENT_START": True},
                     {"POS": {"IN": ["DET", "PRON"]}, "OP": "?", "LOWER": {"NOT_IN": ["it", "that", "this", "me", "about"]}},
                     {"POS": {"IN": ["PROPN", "NOUN", "ADJ", "NUM"]}, "OP": "+"}]],
        # "Japan's off", "the gig is cancelled": the small parser often misreads a contracted copula before these
        "ended_tok": [[{"POS": {"IN": ["PROPN", "NOUN"]}}, {"LOWER": {"IN": ["'s", "’s", "is", "was", "are", "'re", "’re"]}},
                       {"LOWER": {"IN": ENDED_STATES}}],
                      # suspended: "the Japanese is on hold", "the extension's on ice"
                      [{"POS": {"IN": ["PROPN", "NOUN"]}}, {"LOWER": {"IN": ["'s", "’s", "is", "was", "are", "'re", "’re"]}},
                       {"LOWER": "on"}, {"LOWER": {"IN": SUSPENDED}}]],
        # "a guest room instead of the office" however the parse hangs its "of": Y right before, X's head last
        "instead_tok": [[{"POS": {"IN": ["NOUN", "PROPN"]}}, {"LOWER": "instead"}, {"LOWER": "of"},
                         {"POS": {"IN": ["DET", "PRON"]}, "OP": "?"}, {"POS": {"IN": ["ADJ", "NOUN", "PROPN", "NUM"]}, "OP": "*"},
                         {"POS": {"IN": ["NOUN", "PROPN"]}}]],
        # "not X anymore", "no more X"
        "not_anymore": [[{"LOWER": {"IN": ["not", "n't", "never"]}}, {"IS_PUNCT": False, "OP": "{0,5}"},
                         {"LOWER": {"IN": ["anymore", "any"]}}]],
        # "I let my gym membership lapse" (the small parser reads "lapse" as a noun)
        "let_lapse": [[{"LEMMA": "let"}, {"POS": {"IN": ["DET", "PRON"]}, "OP": "?"},
                       {"POS": {"IN": ["ADJ", "NOUN", "PROPN"]}, "OP": "*"}, {"POS": {"IN": ["NOUN", "PROPN"]}},
                       {"LOWER": {"IN": ["lapse", "expire"]}}]],
        # "no more leasing the Corsa", "no more night shifts": what the speaker no longer has or does
        "no_more": [[{"LOWER": "no"}, {"LOWER": "more"}, {"POS": "VERB", "OP": "?"}, {"POS": {"IN": ["DET", "PRON"]}, "OP": "?"},
                     {"POS": {"IN": ["ADJ", "NOUN", "PROPN"]}, "OP": "*"}, {"POS": {"IN": ["NOUN", "PROPN"]}}]],
        # "X is my new Y", "my new Y is X": novelty of a possessed attribute
        "new_attr": [[{"LOWER": {"IN": ["my", "our"]}}, {"LOWER": {"IN": ["new", "current", "latest"]}},
                      {"POS": {"IN": ["NOUN", "PROPN"]}}]],
    }


@dataclass
class Construction:
    """One construction found in a sentence; `old` / `new` are token indices of the values' heads (or None)."""

    name: str  # retract | ended | dismiss | from_to | instead_of | exchange | not_anymore | new_attr
    old: int | None
    new: int | None
    verb: int | None = None


@lru_cache(maxsize=1)
def _matchers() -> tuple[Any, Any]:
    from spacy.matcher import DependencyMatcher, Matcher

    from tracecli.graph.nlp import get_nlp

    nlp = get_nlp()
    dep = DependencyMatcher(nlp.vocab)
    for name, patterns in _dep_patterns().items():
        dep.add(name, patterns)
    tok = Matcher(nlp.vocab)
    for name, patterns in _token_patterns().items():
        tok.add(name, patterns, greedy="LONGEST")
    return dep, tok


def _named_thing(old: Any, prep: Any) -> bool:
    """Is what someone is done with a thing one keeps and leaves (a name, "my physio", "the gym" said without a
    time adjunct: "done with the dishes for today" finishes a task)? A bare common noun ("done with work") and a
    plural of chores ("the dishes") are tasks."""
    from tracecli.graph.frames import lower_case_name

    timed = any(t.ent_type_ in ("DATE", "TIME") for t in prep.head.subtree)
    if timed:
        return False
    if old.pos_ == "PROPN" or lower_case_name(old):
        return True
    return old.tag_ == "NN" and any(c.dep_ in ("det", "poss") for c in old.children)


def find_constructions(sent: Any) -> list[Construction]:
    """The retraction / substitution constructions of one parsed sentence (a Span or Doc)."""
    doc = sent.doc if hasattr(sent, "doc") else sent
    start, end = (sent.start, sent.end) if hasattr(sent, "start") else (0, len(doc))
    dep, tok = _matchers()
    vocab = doc.vocab.strings
    out: list[Construction] = []
    seen: set[tuple[str, int | None, int | None]] = set()
    span_doc = sent.as_doc() if hasattr(sent, "as_doc") else doc
    patterns = _dep_patterns()
    for match_id, token_ids in dep(span_doc):
        name = vocab[match_id]
        # which pattern of that name matched: the one with as many nodes as tokens matched
        pattern = next(p for p in patterns[name] if len(p) == len(token_ids))
        ids = {node["RIGHT_ID"]: span_doc[i].i for node, i in zip(pattern, token_ids)}
        negated_end = name == "ended~not_work_out"
        if name == "retract~done_with" and not _named_thing(span_doc[ids["old"]], span_doc[ids["with"]]):
            continue  # "done with work for today", "finished with the dishes": a task finished, not a thing left
        name = name.split("~")[0]  # a variant pattern of a construction
        verb_tok = span_doc[ids["verb"]] if "verb" in ids else None
        if name == "retract" and verb_tok is not None:
            lemma = verb_tok.lemma_.lower()
            prts = [c.lower_ for c in verb_tok.children]
            need = RETRACT_PARTICLES.get(lemma)
            if need is not None and not any(p in need for p in prts):
                continue  # "give", "call", "move", "get" end something only with their particle
            if ARRIVING.get(lemma) in prts:
                continue  # "we ended up with a Skoda": what it ended in, not what ended (`frames.ARRIVING`)
            if lemma in ("get",) and "rid" not in [c.lower_ for c in verb_tok.subtree]:
                continue
        if name == "instead_of" and "instead" in ids and "new" not in ids:
            head = span_doc[ids["instead"]].head
            if head.lower_ == "of":  # "a guest room instead of the office": the noun the of-phrase hangs on
                head = head.head
                if head.pos_ in ("NOUN", "PROPN"):
                    key = (name, ids.get("old"), head.i)
                    if key not in seen:
                        seen.add(key)
                        out.append(Construction(name, _abs(ids.get("old"), start), _abs(head.i, start), None))
                    continue
            new = next((c.i for c in head.children if c.dep_ in ("dobj", "attr")), None)
            if new is None:
                new = next((g.i for c in head.children if c.dep_ == "prep" and c.lower_ != "instead"
                            for g in c.children if g.dep_ == "pobj"), None)
            key = (name, ids.get("old"), new)
            if key not in seen:
                seen.add(key)
                out.append(Construction(name, _abs(ids.get("old"), start), _abs(new, start), _abs(head.i, start)))
            continue
        if name == "retract" and verb_tok is not None and "new" not in ids:
            # "ditched X for Y", "left X for Y": the replacement in a for-phrase (not a price: "sold it for £200")
            for c in verb_tok.children:
                if c.dep_ == "prep" and c.lower_ == "for":
                    pobj = next((g for g in c.children if g.dep_ == "pobj"), None)
                    if pobj is not None and not pobj.like_num and pobj.ent_type_ not in ("MONEY", "DATE", "TIME", "CARDINAL") \
                            and pobj.lower_ not in _FOR_IDIOMS:
                        ids["new"] = pobj.i
        old_tok = span_doc[ids["old"]] if "old" in ids else None
        if old_tok is not None and old_tok.lower_ in ("thing", "plan", "idea"):
            # "the Lisbon thing fell through": the name the vague noun is about is what ended
            named = next((c for c in old_tok.lefts if c.dep_ == "compound" and c.pos_ in ("PROPN", "NOUN")), None)
            if named is not None:
                ids["old"], old_tok = named.i, named
        if old_tok is not None and (old_tok.pos_ == "PRON" or old_tok.lower_ in ("it", "that", "this", "one", "thing")):
            continue  # "at least it's not cancelled": a pronoun names no value
        if verb_tok is not None and not negated_end and any(c.dep_ == "neg" for c in verb_tok.children):
            continue  # "it's not cancelled" retracts nothing
        if verb_tok is not None and is_hedged(verb_tok):
            continue  # "if I ever quit X", "I might drop X": a possibility retracts nothing
        if name == "ended_state":
            if not _ends_here(span_doc, ids["state"]):
                continue
            name = "ended"
        key = (name, ids.get("old"), ids.get("new"))
        if key in seen:
            continue
        seen.add(key)
        out.append(Construction(name, _abs(ids.get("old"), start), _abs(ids.get("new"), start),
                                _abs(ids.get("verb"), start)))
    if not any(c.name == "from_to" for c in out):
        out.extend(Construction(c.name, _abs(c.old, start), _abs(c.new, start), _abs(c.verb, start))
                   for c in _loose_from_to(span_doc))
    for match_id, s, e in tok(span_doc):
        name = vocab[match_id]
        if name == "ended_tok":
            if not _ends_here(span_doc, e - 1):
                continue
            if not any(c.name == "ended" and c.old == _abs(s, start) for c in out):
                out.append(Construction("ended", _abs(s, start), None, None))
        elif name == "dismiss":
            out.append(Construction(name, _abs(e - 1, start), None, _abs(s, start)))
        elif name == "not_anymore":
            if span_doc[e - 1].lower_ == "any" and (e >= len(span_doc) or span_doc[e].lower_ not in ("more", "longer")):
                continue
            out.append(Construction(name, None, None, _abs(s, start)))
        elif name == "let_lapse":
            out.append(Construction("ended", _abs(e - 2, start), None, _abs(s, start)))
        elif name == "no_more":
            out.append(Construction("retract", _abs(e - 1, start), None, None))
        elif name == "new_attr":
            out.append(Construction(name, None, _abs(e - 1, start), None))
        elif name == "instead_tok":
            if not any(c.name == "instead_of" and c.old == _abs(e - 1, start) and c.new is not None for c in out):
                out = [c for c in out if not (c.name == "instead_of" and c.old == _abs(e - 1, start))]
                out.append(Construction("instead_of", _abs(e - 1, start), _abs(s, start), None))
    return out


#: objects of "for" in adverbial idioms ("quit for good", "dropped it for now"): no replacement
_FOR_IDIOMS = frozenset({"good", "now", "ever", "real", "sure", "once", "keeps", "life"})
#: words that may follow an ended state and keep it one ("the trip is off now", "it's off for good")
_AFTER_ENDED = frozenset({"now", "then", "again", "too", "completely", "entirely", "for", "and", "but", "so", "btw",
                          "lol", "anyway", "sadly", "unfortunately", "apparently", "officially", "already"})


def _ends_here(doc: Any, i: int) -> bool:
    """Does the state word at `i` end its clause? "off" followed by more words is a place or an absence ("the
    dentist is off sick", "Sam's off to uni"), not an ended plan; "gone up" or "gone down" is a change of amount
    ("Sam's gone down to three days"), not an end (while "the boss has gone on sabbatical" is one)."""
    if i + 1 >= len(doc):
        return True
    nxt = doc[i + 1]
    if doc[i].lower_ == "gone":
        return nxt.lower_ not in ("up", "down")
    if doc[i].lower_ != "off":
        return True
    return nxt.is_punct or nxt.lower_ in _AFTER_ENDED


#: how many tokens may stand between a from-phrase's object and its "to" in `_loose_from_to`
_FROM_TO_GAP = 6


def _loose_from_to(doc: Any) -> list[Construction]:
    """"from X to Y" where the parse did not join the two phrases: the from-phrase on the verb's object, the
    to-phrase on a word after X ("renamed the team from Pun Intended to Quiz Khalifa"), or Y misread as a verb
    after an infinitive "to" ("moved me from alto to soprano"). A verb's from-phrase, then, within
    `_FROM_TO_GAP` tokens and no punctuation between, a "to"/"into" whose object (or misread noun,
    `frames.misread_to`) is the new value."""
    from tracecli.graph.frames import misread_to

    out: list[Construction] = []
    for frm in doc:
        if frm.lower_ != "from" or frm.dep_ != "prep":
            continue
        # the from-phrase of the verb, or of its object ("renamed the team from X to Y" hangs it on "team")
        verb = frm.head if frm.head.pos_ in ("VERB", "AUX") else frm.head.head if frm.head.dep_ == "dobj" else None
        old = next((g for g in frm.children if g.dep_ == "pobj"), None)
        if verb is None or old is None or old.pos_ == "PRON" or is_hedged(verb) or any(c.dep_ == "neg" for c in verb.children):
            continue
        # "from £200 to £350" read as one range: the to-number is the object, the from-number its modifier
        to = next((c for c in old.children if c.dep_ == "quantmod" and c.lower_ == "to"), None)
        first = next((c for c in old.children if c.dep_ == "quantmod" and c.like_num and to is not None
                      and c.i < to.i), None)
        if first is not None:
            out.append(Construction("from_to", first.i, old.i, verb.i))
            continue
        for j in range(old.i + 1, min(len(doc), old.i + 1 + _FROM_TO_GAP)):
            to = doc[j]
            if to.is_punct:
                break
            if to.lower_ not in ("to", "into"):
                continue
            new = next((g.i for g in to.children if g.dep_ == "pobj"), None) if to.dep_ == "prep" else \
                next((v.i for t, v in misread_to(to.head.head) if t.i == to.i), None) if to.dep_ == "aux" else None
            if new is None and to.dep_ == "aux" and to.head.i == to.i + 1 and to.head.lower_ == old.lower_:
                new = to.head.i  # "from board four to board two": the old value's noun again, misread as a verb
            if new is not None:
                out.append(Construction("from_to", old.i, new, verb.i))
            break
    return out


def _abs(i: int | None, start: int) -> int | None:
    """A token index of the sentence's own Doc → the index in the whole Doc."""
    return None if i is None else i + start
