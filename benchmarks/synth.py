"""Seeded synthetic conversations in tracecli's native session format.

    from synth import generate, add_session   # from a script in benchmarks/ (or benchmarks.synth from the repo root)
    conv = generate(10_000, seed=7)        # {"conversation_id", "participants", "sessions": [...], "facts": [...]}

Two or three friends chat several times a week: small talk, questions,
plans with dates, causal remarks ("so I …", "because …", "thanks to …"), and
facts about themselves that change over time — where they live, work, what
they eat and drink, their sport, their pet's name, their hobbies, trips —
revised explicitly ("Forget Leeds, it's Porto now", "I switched from X to Y",
"not … anymore") or implicitly (a later statement of a new value). Every
message has a timestamp; sessions are one to three days apart.

`facts` lists each stated fact in order (person, facet, value, kind =
initial | explicit | implicit, message id), so a benchmark can score
revisions. The same (n_messages, seed) always gives the same conversation;
`python benchmarks/synth.py 1000 --seed 7 > conv.json` writes one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
from dataclasses import dataclass, field
from typing import Any

NAMES = ["Alice", "Bob", "Chloe", "Dev", "Erin", "Farid", "Gemma", "Hugo", "Isla", "Jonas", "Keira", "Luca",
         "Maya", "Nikhil", "Olga", "Priya", "Quentin", "Rosa", "Sam", "Tariq"]
CITIES = ["Leeds", "Porto", "Sheffield", "Edinburgh", "Bristol", "Lisbon", "Manchester", "Glasgow", "Utrecht",
          "Valencia", "Cardiff", "Brighton", "York", "Ghent", "Bologna", "Nantes", "Aarhus", "Galway"]
COMPANIES = ["Acme Bank", "Greenleaf Energy", "Helix Robotics", "Northwind Labs", "Brightwave", "Lumen Health",
             "Halden Analytics", "Quarry Studios", "Bluefin Logistics", "Cobalt Games", "Tidewater Insurance",
             "Meridian Foods", "Copperline Media", "Fernhill Architects"]
DIETS = ["vegetarian", "vegan", "pescatarian", "flexitarian", "gluten-free"]
COFFEES = ["flat white", "cortado", "oat latte", "cappuccino", "americano", "espresso", "matcha latte", "chai latte"]
SPORTS = ["squash", "padel", "tennis", "climbing", "bouldering", "swimming", "running", "cycling", "yoga", "badminton"]
PETS = {"cat": ["Biscuit", "Mochi", "Pepper", "Miso", "Tofu", "Luna"], "dog": ["Rex", "Buster", "Olive", "Pickle", "Bramble"]}
HOBBIES = ["pottery", "hiking", "painting", "baking", "knitting", "gardening", "photography", "chess", "salsa", "birdwatching"]
TRIPS = ["Japan", "Iceland", "Lisbon", "Crete", "Norway", "Morocco", "Sicily", "Vienna", "Copenhagen", "Madeira"]

SMALL_TALK = [
    "haha", "lol yes", "Morning!", "Ugh, Mondays.", "That sounds lovely!", "Speak soon!", "Oh nice!", "No way 😂",
    "It's been raining all week here.", "Congrats!!", "Fair enough.", "Sounds about right.", "Ha, classic.", "Night!",
    "Let me know how it goes.", "Honestly same.",
]
EXCHANGES = [  # (one person, the other's reply)
    ("How was your weekend?", "Not bad, pretty quiet."), ("How's work going?", "Busy, but fine."),
    ("Did you watch the match last night?", "I missed it, was it good?"), ("Any plans for the weekend?", "Not yet, you?"),
    ("Sorry, went quiet, it's been chaos.", "No worries!"), ("How's the family?", "All good, thanks for asking."),
    ("Are you around on Thursday?", "Should be, after six."), ("Did you get my voice note?", "Yes! Will listen tonight."),
]
ACTIVITIES = [
    "I cooked a massive lasagne for the neighbours on Sunday.",
    "We walked along the canal this morning and saw a heron.",
    "I finally finished that book about the Arctic expedition.",
    "I fixed the leaky tap in the bathroom myself.",
    "We spent the whole afternoon at the flea market.",
    "I repainted the spare room a dark green.",
    "My sister came over and we watched three films in a row.",
    "I signed up for a first aid course at the community centre.",
    "We tried the new ramen place near the station.",
    "I planted tomatoes and basil on the balcony.",
    "I ran my first 10k without stopping last weekend.",
    "We hosted a board game night and it went on until 2am.",
]
CAUSAL = [
    "I got a promotion, so I bought a new bike.",
    "The trains were on strike, which is why I worked from home all week.",
    "Thanks to the sunny weather, we had a barbecue in the garden.",
    "I started cycling to work because the buses were always late.",
    "After the long winter, I decided to book a week somewhere warm.",
    "I wanted to go to the gig but a cold stopped me from going.",
    "My back was killing me, which is why I started stretching every morning.",
    "We finally got the mortgage approved, so we started looking at houses.",
]
QUESTIONS = {
    "residence": "Where are you living these days?",
    "employer": "Where are you working now?",
    "diet": "Are you still eating meat?",
    "coffee": "What's your usual coffee order?",
    "sport": "Are you still playing {old}?",
    "pet": "What's your {species} called again?",
    "hobbies": "What do you get up to at weekends?",
    "trip": "Where are you off to this year?",
}


@dataclass
class Person:
    name: str
    residence: str
    employer: str
    diet: str
    coffee: str
    sport: str
    species: str
    pet: str
    hobbies: list[str]
    trip: str
    said: set[str] = field(default_factory=set)  # facets already stated once


def _pick_other(rng: random.Random, pool: list[str], current: str) -> str:
    return rng.choice([x for x in pool if x != current])


def _hobby_text(items: list[str]) -> str:
    return f"{', '.join(items[:-1])} and {items[-1]}"


class _Story:
    """Generates sessions one at a time; all randomness comes from one seeded Random."""

    def __init__(self, rng: random.Random, people: list[Person], start: dt.datetime) -> None:
        self.rng = rng
        self.people = people
        self.when = start
        self.sessions: list[dict[str, Any]] = []
        self.facts: list[dict[str, Any]] = []

    # facts --------------------------------------------------------------------------
    def _state(self, p: Person, facet: str) -> str:
        return {"residence": p.residence, "employer": p.employer, "diet": p.diet, "coffee": p.coffee,
                "sport": p.sport, "pet": p.pet, "hobbies": _hobby_text(p.hobbies), "trip": p.trip}[facet]

    def _initial(self, p: Person, facet: str) -> str:
        r = self.rng
        return r.choice({
            "residence": [f"I live in {p.residence}.", f"We're still living in {p.residence} for now.",
                          f"Home is {p.residence} at the moment."],
            "employer": [f"I work at {p.employer}.", f"I'm working at {p.employer} these days."],
            "diet": [f"I'm {p.diet} these days.", f"I've been {p.diet} for about a year."],
            "coffee": [f"My usual is a {p.coffee}.", f"{p.coffee.capitalize()} for me, always."],
            "sport": [f"I play {p.sport} most weeks.", f"I've got {p.sport} tonight, can't wait."],
            "pet": [f"My {p.species} is called {p.pet}.", f"Our {p.species} {p.pet} is being a menace today."],
            "hobbies": [f"I love {_hobby_text(p.hobbies)}.", f"My weekends are mostly {_hobby_text(p.hobbies)}."],
            "trip": [f"We booked a trip to {p.trip} for the spring.", f"We're flying to {p.trip} in May."],
        }[facet])

    def _revise(self, p: Person, facet: str) -> tuple[str, str]:
        """Change a fact; returns (text, kind)."""
        r = self.rng
        explicit = r.random() < 0.55
        if facet == "residence":
            old, p.residence = p.residence, _pick_other(r, CITIES, p.residence)
            if explicit:
                return r.choice([f"We moved from {old} to {p.residence}, finally.",
                                 f"Forget {old}, it's {p.residence} now."]), "explicit"
            return r.choice([f"We finally moved into our new flat in {p.residence}.", f"I live in {p.residence} now."]), "implicit"
        if facet == "employer":
            old, p.employer = p.employer, _pick_other(r, COMPANIES, p.employer)
            if explicit:
                return f"I switched from {old} to {p.employer}.", "explicit"
            return r.choice([f"I now work at {p.employer}.", f"First week at {p.employer} done!"]), "implicit"
        if facet == "diet":
            old, p.diet = p.diet, _pick_other(r, DIETS, p.diet)
            if explicit:
                return f"I'm not {old} anymore, I'm {p.diet} now.", "explicit"
            return f"I'm {p.diet} now.", "implicit"
        if facet == "coffee":
            old, p.coffee = p.coffee, _pick_other(r, COFFEES, p.coffee)
            if explicit:
                return f"I'm not drinking {old}s anymore, it's a {p.coffee} every morning.", "explicit"
            return f"My usual is a {p.coffee} now.", "implicit"
        if facet == "sport":
            old, p.sport = p.sport, _pick_other(r, SPORTS, p.sport)
            if explicit:
                return f"I no longer play {old}, I joined a {p.sport} club instead.", "explicit"
            return f"I've taken up {p.sport}.", "implicit"
        if facet == "pet":
            old, p.pet = p.pet, _pick_other(r, PETS[p.species], p.pet)
            return f"We renamed the {p.species} {p.pet}, {old} never suited her.", "explicit"
        if facet == "hobbies":
            p.hobbies = [p.hobbies[0], *r.sample([h for h in HOBBIES if h not in p.hobbies], 2)]
            return f"My weekends are mostly {_hobby_text(p.hobbies)} now.", "implicit"
        old, p.trip = p.trip, _pick_other(r, TRIPS, p.trip)
        if explicit:
            return f"We're doing {p.trip} instead of {old} this year.", "explicit"
        return f"We booked flights to {p.trip}.", "implicit"

    # sessions -----------------------------------------------------------------------
    def session(self, n_messages: int) -> dict[str, Any]:
        r = self.rng
        idx = len(self.sessions) + 1
        # several sessions a week: one to three days later, at a different time of day
        self.when = (self.when + dt.timedelta(days=r.choice([1, 1, 2, 2, 3]))).replace(
            hour=r.choice([8, 12, 13, 18, 19, 20, 21]), minute=r.randrange(60), second=0)
        t = self.when
        msgs: list[dict[str, Any]] = []

        def say(person: Person, text: str) -> str:
            nonlocal t
            mid = f"s{idx}-m{len(msgs) + 1}"
            msgs.append({"id": mid, "speaker": person.name, "text": text,
                         "timestamp": t.strftime("%Y-%m-%dT%H:%M:%SZ")})
            t += dt.timedelta(seconds=r.randint(20, 240))
            return mid

        facets = ["residence", "employer", "diet", "coffee", "sport", "pet", "hobbies", "trip"]
        while len(msgs) < n_messages:
            p = r.choice(self.people)
            other = r.choice([q for q in self.people if q is not p])
            roll = r.random()
            if roll < 0.30:
                say(p, r.choice(SMALL_TALK))
            elif roll < 0.48:
                ask, reply = r.choice(EXCHANGES)
                say(p, ask)
                say(other, reply)
            elif roll < 0.63:
                say(p, r.choice(ACTIVITIES))
            elif roll < 0.70:
                say(p, r.choice(CAUSAL))
            elif roll < 0.78:
                day = (t + dt.timedelta(days=r.randint(5, 120))).date()
                say(p, r.choice([f"My sister's wedding is on {day.day} {day.strftime('%B')}.",
                                 f"The conference is on {day.day} {day.strftime('%B')}, wish me luck.",
                                 "We're seeing my parents next weekend.", "I've got a dentist appointment tomorrow."]))
            elif roll < 0.88:
                facet = r.choice(facets)
                if facet not in p.said:
                    if r.random() < 0.3 and len(msgs) < n_messages - 1:
                        say(other, QUESTIONS[facet].format(old=p.sport, species=p.species))
                    kind, text = "initial", self._initial(p, facet)
                    p.said.add(facet)
                elif r.random() < 0.25:
                    text, kind = self._revise(p, facet)
                else:
                    kind, text = "repeat", self._initial(p, facet)
                mid = say(p, text)
                if kind != "repeat":
                    self.facts.append({"person": p.name, "facet": facet, "value": self._state(p, facet),
                                       "kind": kind, "message_id": mid, "session": f"s{idx}"})
            else:
                say(p, r.choice(SMALL_TALK))
        msgs = msgs[:n_messages]
        session = {"id": f"s{idx}", "started_at": msgs[0]["timestamp"], "messages": msgs}
        self.sessions.append(session)
        return session


def _story(seed: int) -> _Story:
    rng = random.Random(seed)
    names = rng.sample(NAMES, rng.choice([2, 2, 3]))
    people = []
    for name in names:
        species = rng.choice(list(PETS))
        people.append(Person(
            name=name, residence=rng.choice(CITIES), employer=rng.choice(COMPANIES), diet=rng.choice(DIETS),
            coffee=rng.choice(COFFEES), sport=rng.choice(SPORTS), species=species, pet=rng.choice(PETS[species]),
            hobbies=rng.sample(HOBBIES, 3), trip=rng.choice(TRIPS),
        ))
    start = dt.datetime(2023, 1, 2, 9, 0) + dt.timedelta(days=rng.randrange(365))
    return _Story(rng, people, start)


def generate(n_messages: int, seed: int = 0) -> dict[str, Any]:
    """A conversation of exactly `n_messages` messages in the native format (deterministic in seed)."""
    if n_messages < 1:
        raise ValueError("n_messages must be at least 1")
    story = _story(seed)
    total = 0
    while total < n_messages:
        size = min(story.rng.randint(12, 30), n_messages - total)
        story.session(size)
        total += size
    return {
        "conversation_id": f"synth-{n_messages}-{seed}",
        "participants": [p.name for p in story.people],
        "sessions": story.sessions,
        "facts": story.facts,
    }


def add_session(conv: dict[str, Any], seed: int = 0, n_messages: int = 20) -> dict[str, Any]:
    """`conv` plus one new session after its last one (same people and facts; a new copy)."""
    rng = random.Random(f"{conv['conversation_id']}:{seed}:{len(conv['sessions'])}")
    people = []
    for name in conv["participants"]:
        species = rng.choice(list(PETS))
        latest = {f["facet"]: f["value"] for f in conv.get("facts", []) if f["person"] == name}
        hobbies = latest.get("hobbies", "").replace(" and ", ", ").split(", ") if latest.get("hobbies") else rng.sample(HOBBIES, 3)
        people.append(Person(
            name=name, residence=latest.get("residence", rng.choice(CITIES)), employer=latest.get("employer", rng.choice(COMPANIES)),
            diet=latest.get("diet", rng.choice(DIETS)), coffee=latest.get("coffee", rng.choice(COFFEES)),
            sport=latest.get("sport", rng.choice(SPORTS)), species=species, pet=latest.get("pet", rng.choice(PETS[species])),
            hobbies=hobbies, trip=latest.get("trip", rng.choice(TRIPS)), said=set(latest),
        ))
    last = conv["sessions"][-1]["messages"][-1]["timestamp"]
    story = _Story(rng, people, dt.datetime.strptime(last, "%Y-%m-%dT%H:%M:%SZ"))
    story.sessions = [dict(s) for s in conv["sessions"]]
    story.session(n_messages)
    return {**conv, "sessions": story.sessions, "facts": [*conv.get("facts", []), *story.facts]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Write a synthetic conversation (native JSON) to stdout.")
    ap.add_argument("n_messages", type=int)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    json.dump(generate(args.n_messages, args.seed), sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
