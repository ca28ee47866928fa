"""Facets: the kinds of fact that change over time, how statements and questions name them.

A fact that can change is normalised to (subject, facet, value). Statement
patterns find a facet and its value in one sentence; the same lexicon maps a
question to the facet it asks about, so `ask` can follow that facet's update
chain to the current (or as-of) value. Everything here is data plus small pure
functions; `extract.py` applies it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# -- value shapes ------------------------------------------------------------------
_CAPWORD = r"[A-Z][\w'’\-]*"
CAP = rf"(?P<value>{_CAPWORD}(?:[ \-](?:de |da |do |del |la |le |of |upon |am |sur |and )?{_CAPWORD}){{0,3}})"
# a lower-case phrase of up to four words, stopping before a clause boundary
_STOP = r"(?=\s+(?:at|in|on|for|because|since|now|instead|anymore|any more|this|next|last|and then|but|so|which|with|from|after|before|though|tbh|lol|haha)\b|\s*[.,!?;:)(—–-]|\s*$)"
PHRASE = rf"(?P<value>[A-Za-z][\w'’\-]*(?:\s+[A-Za-z][\w'’\-]*){{0,3}}?){_STOP}"
NAME = r"(?P<value>[A-Z][a-zA-Z'’\-]+(?:\s+(?!Is\b|Was\b|And\b)[A-Z][a-zA-Z'’\-]+)?)"

FIRST = r"(?:i|we)"
AUX = r"(?:'m|’m| am|'re|’re| are|'ve|’ve| have|'ll|’ll| will|'d|’d| would| had| was| were)?"
MODAL = (
    r"(?:(?:probably|definitely|finally|actually|officially|now|still|just|really|hopefully|eventually|also|both|"
    r"going to|gonna|planning to|plan to|planning on|hoping to|hope to|want to|wanna|will|might|may|could|"
    r"decided to|deciding to|thinking of|thinking about|considering|about to|set to|trying to|looking to|"
    r"ready to|excited to|due to|supposed to|able to|be|to|get to|getting)\s+)*"
)

SPECIES = {
    "cat": "cat", "kitten": "cat", "kitty": "cat", "dog": "dog", "puppy": "dog", "pup": "dog",
    "greyhound": "dog", "labrador": "dog", "retriever": "dog", "terrier": "dog", "spaniel": "dog",
    "poodle": "dog", "beagle": "dog", "collie": "dog", "corgi": "dog", "dachshund": "dog",
    "rabbit": "rabbit", "bunny": "rabbit", "hamster": "hamster", "parrot": "bird", "bird": "bird",
    "budgie": "bird", "fish": "fish", "goldfish": "fish", "turtle": "turtle", "tortoise": "turtle",
    "horse": "horse", "pony": "horse", "snake": "snake", "lizard": "lizard", "guinea pig": "guinea pig",
}
_SPECIES_RE = "|".join(sorted((re.escape(s) for s in SPECIES), key=len, reverse=True))

DIETS = {
    "vegan": "vegan", "vegetarian": "vegetarian", "veggie": "vegetarian", "pescatarian": "pescatarian",
    "pescetarian": "pescatarian", "keto": "keto", "paleo": "paleo", "gluten-free": "gluten-free",
    "gluten free": "gluten-free", "dairy-free": "dairy-free", "dairy free": "dairy-free",
    "plant-based": "vegan", "plant based": "vegan", "carnivore": "carnivore", "flexitarian": "flexitarian",
}
_DIET_RE = "|".join(sorted((re.escape(d) for d in DIETS), key=len, reverse=True))

COFFEES = (
    "flat white", "oat latte", "oat milk latte", "latte", "cappuccino", "espresso", "americano", "macchiato",
    "cortado", "mocha", "filter coffee", "cold brew", "iced coffee", "long black", "galão", "galao",
    "matcha latte", "chai latte", "black coffee", "decaf", "green tea", "black tea", "earl grey", "herbal tea",
    "chai", "iced latte", "double espresso", "triple espresso", "matcha", "hot chocolate",
    "kombucha", "gin and tonic", "g&t", "beer", "red wine", "white wine", "rosé", "cider", "lager", "ipa",
    "negroni", "aperol spritz", "spritz", "mojito", "margarita", "whisky", "whiskey", "smoothie", "lemonade",
    "sparkling water", "oolong", "rooibos", "peppermint tea", "mint tea", "yerba mate", "bubble tea", "flat whites",
    "cortados", "lattes", "espresso martini", "old fashioned", "pint of guinness", "guinness", "prosecco", "champagne",
)
_COFFEE_RE = "|".join(sorted((re.escape(c) for c in COFFEES), key=len, reverse=True))

SPORTS = (
    "squash", "padel", "tennis", "badminton", "football", "five-a-side", "soccer", "basketball", "volleyball",
    "running", "swimming", "cycling", "climbing", "bouldering", "yoga", "pilates", "boxing", "rowing",
    "golf", "rugby", "cricket", "hockey", "netball", "table tennis", "ping pong", "crossfit", "karate",
    "judo", "surfing", "skiing", "snowboarding", "hiking", "jogging", "weightlifting", "skating", "dancing",
    "triathlon", "marathon training", "spin", "spinning", "kayaking", "sailing", "fencing", "archery",
    "softball", "baseball", "roller derby", "water polo", "lacrosse", "handball", "trail running", "ultimate frisbee",
    "frisbee", "parkour", "muay thai", "kickboxing", "jiu-jitsu", "bjj", "taekwondo", "aikido", "tai chi", "ballet",
    "open water swimming", "paddleboarding", "canoeing", "mountain biking", "road cycling", "powerlifting",
    "crossfit", "pickleball", "darts", "snooker", "pool", "bowling", "curling", "ice hockey", "field hockey",
    "american football", "gaelic football", "hurling", "wrestling", "gymnastics", "athletics", "sprinting",
)
CAR_MAKES_RE = (
    "Skoda|Škoda|Kia|Toyota|Ford|VW|Volkswagen|Tesla|Honda|BMW|Audi|Nissan|Hyundai|Renault|Peugeot|Fiat|Mazda|"
    "Volvo|Mercedes|Subaru|Vauxhall|Mini|Citroen|Citroën|Seat|SEAT|Lexus|Jeep|Polestar|BYD|MG|Dacia|Porsche|Cupra|Opel|Suzuki"
)
CAR_MODELS = (
    "Prius", "Jazz", "Corsa", "Clio", "Panda", "Octavia", "Niro", "Golf", "Polo", "Fiesta", "Focus", "Civic", "Yaris",
    "Model 3", "Model Y", "Mini Cooper", "Cooper", "Juke", "Qashqai", "Leaf", "Zoe", "Astra", "Micra", "Corolla",
    "Camry", "RAV4", "Outback", "Forester", "CR-V", "Accord", "Mustang", "Beetle", "Passat", "Tiguan", "ID.3",
    "Ioniq", "Kona", "Tucson", "i10", "i20", "i30", "Fabia", "Superb", "Kodiaq", "Sandero", "Duster", "Picanto",
    "Sportage", "Ceed", "500", "Punto", "Megane", "Captur", "208", "308", "2008", "3008", "C3", "C4", "Berlingo",
    "Transit", "Swift", "Impreza", "Miata", "MX-5", "Wrangler", "Cherokee", "Land Rover", "Defender", "Discovery",
)
_SPORT_RE = "|".join(sorted((re.escape(s) for s in SPORTS), key=len, reverse=True))

INSTRUMENTS = (
    "piano", "guitar", "electric guitar", "bass", "bass guitar", "violin", "viola", "cello", "double bass", "drums",
    "flute", "clarinet", "saxophone", "sax", "trumpet", "trombone", "ukulele", "harp", "banjo", "mandolin",
    "accordion", "harmonica", "oboe", "bassoon", "keyboard", "synth", "organ", "french horn", "tuba",
)
RELATIVES = (
    "sister", "brother", "mum", "mom", "mother", "dad", "father", "daughter", "son", "cousin", "aunt", "auntie",
    "uncle", "niece", "nephew", "grandma", "grandmother", "gran", "granny", "grandpa", "grandfather", "grandad",
    "stepdad", "stepmum", "stepmom", "stepsister", "stepbrother", "twin", "sister-in-law", "brother-in-law",
    "best friend", "flatmate", "roommate", "housemate", "boss", "manager",
)

EVENT_NOUNS = (
    "wedding", "party", "birthday party", "housewarming", "concert", "gig", "launch", "graduation",
    "conference", "interview", "exam", "surgery", "operation", "appointment", "move", "moving day",
    "trip", "flight", "holiday", "vacation", "marathon", "race", "recital", "show", "premiere", "opening",
    "meeting", "presentation", "deadline", "defence", "defense", "ceremony", "reunion", "festival", "match",
    "tournament", "game", "shoot", "retreat", "honeymoon", "exhibition", "due date", "start date",
)
_EVENT_RE = "|".join(sorted((re.escape(e) for e in EVENT_NOUNS), key=len, reverse=True))
EVENT_ALIASES = {"gig": "concert", "show": "concert", "tickets": "concert", "vacation": "holiday", "flight": "trip",
                 "flights": "trip", "defense": "defence", "thesis defence": "defence", "thesis defense": "defence",
                 "operation": "surgery", "product launch": "launch", "launch party": "launch", "birthday party": "birthday",
                 "moving day": "move", "viva": "defence", "honeymoon": "honeymoon"}

REVISION_CUES = re.compile(
    r"\b(instead|anymore|any more|changed (?:my|our|his|her|their) minds?|after all|switch(?:ed|ing)?|"
    r"rebook(?:ed)?|renamed?|no longer|forget|scrap(?:ped)?|cancel(?:l?ed)?|postponed?|rescheduled?|"
    r"pushed (?:it |the \w+ )?back|moved (?:it|the \w+) (?:to|back|forward)|brought forward|"
    r"turns? out|ended up|actually|not .{1,30} anymore|now)\b",
    re.IGNORECASE,
)
STRONG_CUES = re.compile(
    r"\b(instead|anymore|any more|changed (?:my|our|his|her|their) minds?|after all|switch(?:ed|ing)?|"
    r"rebook(?:ed)?|renamed?|no longer|forget|scrap(?:ped)?|postponed?|rescheduled?|ended up|"
    r"moved (?:it|the \w+) (?:to|back|forward)|pushed (?:it |the \w+ )?back)\b",
    re.IGNORECASE,
)
COUNTERFACTUAL = re.compile(
    r"\b(would have|would've|could have|could've|should have|should've|might have|if (?:i|we|she|he|they) had|"
    r"if (?:i|we|she|he|they|you)'d|if (?:i|we|she|he|they|you)’d|if you had|imagine if|wish (?:i|we)|would be (?:our|my) )", re.IGNORECASE
)
NEGATION = re.compile(r"\b(not|never|no longer|don't|do not|didn't|isn't|aren't|won't|wasn't|can't|nope)\b", re.I)


@dataclass(frozen=True)
class FacetSpec:
    """One kind of changeable fact."""

    name: str
    kind: str  # place | org | name | date | thing | list
    event_type: str  # default event type when the statement has no stronger signal
    label: str  # human words used in descriptions ("lives in", "works at")
    question: str  # regex over a question that asks about this facet


FACETS: dict[str, FacetSpec] = {
    f.name: f
    for f in [
        FacetSpec("residence", "place", "state_change", "lives in / is moving to",
                  r"\b(live|lives|(?<!for a )living|move|moving|moved|relocat\w*|settl\w*|based|home|stay(?:ing)?|reside\w*|flat|apartment|house)\b"),
        FacetSpec("moving_to", "place", "plan", "is moving to",
                  r"\b(mov(?:e|es|ing)|relocat\w*|settl\w*|emigrat\w*|transfer)\b"),
        FacetSpec("hometown", "place", "state_change", "is originally from",
                  r"\b(from originally|originally from|originally|hometown|home town|gr[eo]w(?:s|ing|n)? up|born|where is \w+ from|where does \w+ come from)\b"),
        FacetSpec("instrument", "thing", "preference", "plays",
                  r"\b(instrument|play the|plays the)\b"),
        FacetSpec("club", "org", "state_change", "is a member of",
                  r"\b(club|member|league|society|choir|team)\b"),
        FacetSpec("employer", "org", "state_change", "works at",
                  r"\b(work|works|working|job|employer|company|firm|employed|hired|restaurant|cook at|cooks at|chef at|which (?:bank|school|hospital|shop|agency|studio|practice|clinic|charity|startup|office|store|cafe|bar|hotel))\b"),
        FacetSpec("occupation", "thing", "state_change", "works as",
                  r"\b(do for a living|occupation|profession|role|position|job title|what does \w+ do)\b"),
        FacetSpec("study", "thing", "state_change", "studies",
                  r"\b(stud(?:y|ies|ying)|course|degree|major|masters?|msc|phd|learning|class(?:es)?)\b"),
        FacetSpec("diet", "thing", "preference", "follows a diet:",
                  r"\b(diet|eat|eats|eating|vegan|vegetarian|pescatarian|meat|food)\b"),
        FacetSpec("coffee", "thing", "preference", "drinks",
                  r"\b(coffee|drink|drinks|latte|tea|order|orders)\b"),
        FacetSpec("sport", "thing", "preference", "plays",
                  r"\b(sport|sports|play|plays|playing|exercise|train|trains|gym|league)\b"),
        FacetSpec("hobbies", "list", "preference", "enjoys",
                  r"\b(hobbies|hobby|enjoy|enjoys|love doing|likes doing|free time|spare time|pastimes?|unwind|relax|switch off|for fun|weekends|evenings)\b"),
        FacetSpec("partner", "name", "state_change", "is with",
                  r"\b(partner|boyfriend|girlfriend|husband|wife|fianc[eé]e?|dating|married to|engaged to)\b"),
        FacetSpec("relationship", "thing", "state_change", "is",
                  r"\b(relationship|engaged|married|single|dating|status)\b"),
        FacetSpec("trip_destination", "place", "plan", "is travelling to",
                  r"\b(trip|travel\w*|holiday|vacation|honeymoon|visit\w*|fly\w*|flight|going to go|destination|where .*\b(?:go|going|went|head\w*)\b)"),
        FacetSpec("car", "thing", "state_change", "drives",
                  r"\b(car|drive|drives|driving|vehicle|bought|buy)\b"),
    ]
}


def pet_facet(species: str) -> str:
    return f"pet_name:{SPECIES.get(species.lower(), species.lower())}"


def family_facet(relation: str) -> str:
    rel = relation.lower().strip()
    rel = {"mom": "mum", "mother": "mum", "father": "dad", "grandmother": "grandma", "gran": "grandma", "granny": "grandma",
           "grandfather": "grandpa", "grandad": "grandpa", "auntie": "aunt", "roommate": "flatmate", "housemate": "flatmate"}.get(rel, rel)
    return f"family:{rel}"


_EVENT_VERB_NOUNS = {"launched": "launch", "opened": "opening", "released": "launch", "graduated": "graduation",
                     "moved": "move", "shipped": "launch", "went live": "launch", "open": "opening", "release": "launch",
                     "ship": "launch", "go live": "launch", "graduate": "graduation", "finish": "deadline"}


def date_facet(event: str) -> str:
    event = event.lower().strip()
    event = _EVENT_VERB_NOUNS.get(event, event)
    event = EVENT_ALIASES.get(event, event)
    parts = event.rsplit(" ", 1)
    if len(parts) == 2 and parts[1] in EVENT_ALIASES:  # "spring gig" → "spring concert"
        event = f"{parts[0]} {EVENT_ALIASES[parts[1]]}"
    return f"date:{EVENT_ALIASES.get(event, event)}"


def venue_facet(event: str) -> str:
    event = event.lower().strip()
    return f"venue:{EVENT_ALIASES.get(event, event)}"


def favourite_facet(category: str) -> str:
    return f"favourite:{category.lower().strip()}"


def facet_kind(facet: str) -> str:
    """The value kind of any facet, including parameterised ones."""
    if facet.startswith(("pet_name:", "family:")):
        return "name"
    if facet.startswith("date:"):
        return "date"
    if facet.startswith("venue:"):
        return "place"
    if facet.startswith("favourite:"):
        return "thing"
    spec = FACETS.get(facet)
    return spec.kind if spec else "thing"


def facet_label(facet: str) -> str:
    """Words for a description: 'Alice <label> <value>'."""
    if facet.startswith("pet_name:"):
        return f"has a {facet.split(':', 1)[1]} named"
    if facet.startswith("family:"):
        return f"has a {facet.split(':', 1)[1]} named"
    if facet.startswith("date:"):
        return f"has the {facet.split(':', 1)[1]} set for"
    if facet.startswith("venue:"):
        return f"has the {facet.split(':', 1)[1]} at"
    if facet.startswith("favourite:"):
        return f"has as favourite {facet.split(':', 1)[1]}"
    spec = FACETS.get(facet)
    return spec.label if spec else facet


def normalise_value(value: str) -> str:
    """Comparable form of a value: lower case, no articles or punctuation."""
    v = value.lower().strip()
    v = re.sub(r"[’']s\b", "", v)
    v = re.sub(r"^(?:the|a|an|my|our|his|her|their)\s+", "", v)
    v = re.sub(r"[^\w\s\-]", "", v)
    v = re.sub(r"\s+", " ", v).strip()
    return v


# -- question → facet ------------------------------------------------------------------

_Q_PET = re.compile(rf"\b({_SPECIES_RE}|pet)(?:'s|s)?\b", re.I)
_Q_DATE = re.compile(rf"\b(when|what date|which date|what day|date)\b.*?\b({_EVENT_RE}|leav\w+|depart\w*|fly\w*|married|launch\w*|open\w*|graduat\w*|releas\w*)\b|\b({_EVENT_RE})\b.*\b(when|date)\b", re.I)
_Q_VENUE = re.compile(rf"\b(where|venue|which place|what place)\b.*?\b({_EVENT_RE}|married)\b|\b({_EVENT_RE})\b.*\b(venue|held|hosted)\b", re.I)
_Q_FAMILY = re.compile(r"\b(" + "|".join(sorted((re.escape(r) for r in RELATIVES), key=len, reverse=True)) + r")(?:'s|’s)?\s+(?:name|called|named)|(?:name|called)\b.*\b(" + "|".join(re.escape(r) for r in RELATIVES) + r")\b", re.I)
_Q_FAV = re.compile(r"\bfavou?rite\s+([a-z]+(?:\s+[a-z]+)?)", re.I)


def question_facets(question: str) -> list[str]:
    """Facets a question may ask about, most specific first."""
    q = question
    out: list[str] = []
    m = _Q_FAV.search(q)
    if m:
        out.append(favourite_facet(m.group(1).rstrip("?")))
    if re.search(r"\b(name|named|called|call)\b", q, re.I) or re.search(r"\bpet\b", q, re.I):
        m = _Q_PET.search(q)
        if m:
            word = m.group(1).lower()
            out.append(pet_facet(word) if word != "pet" else "pet_name:*")
    if not re.search(r"\bwhere\b", q, re.I):
        m = _Q_VENUE.search(q)
        if m and (m.group(2) or m.group(3)):
            noun = (m.group(2) or m.group(3)).lower()
            if "trip" not in noun:
                out.append(venue_facet("wedding" if noun == "married" else noun))
    m = _Q_FAMILY.search(q)
    if m:
        out.append(family_facet(m.group(1) or m.group(2)))
    if re.search(r"\bwhere\b", q, re.I):
        m = _Q_VENUE.search(q)
        if m and "trip" not in (m.group(2) or m.group(3) or "").lower():
            noun = (m.group(2) or m.group(3)).lower()
            out.append(venue_facet("wedding" if noun == "married" else noun))
    m = _Q_DATE.search(q)
    if m:
        event = m.group(2) or m.group(3)
        qual = re.search(r"(?i)\b(spring|summer|autumn|fall|winter|christmas|easter|school|work|office|leaving|engagement|farewell|end-of-year|final|first)\s+" + re.escape(event or "") + r"\b", q) if event else None
        if event:
            if re.match(r"(?i)leav|depart|fly", event):
                event = "trip"
            elif event.lower() == "married":
                event = "wedding"
            elif re.match(r"(?i)launch|releas", event):
                event = "launch"
            elif re.match(r"(?i)graduat", event):
                event = "graduation"
            elif re.match(r"(?i)open", event):
                event = "opening"
            if qual:
                out.append(date_facet(f"{qual.group(1)} {event}"))
            out.append(date_facet(event))
    if re.search(r"\b(diet|vegan|vegetarian|pescatarian|eat meat)\b", q, re.I):
        out.append("diet")
    if re.search(r"\b(coffee|latte|drink|drinks|drinking|tea)\b", q, re.I):
        out.append("coffee")
    if re.search(rf"\b(sport|{_SPORT_RE})\b", q, re.I) and not re.search(r"\bfavou?rite\b", q, re.I):
        out.append("sport")
    for name, spec in FACETS.items():
        if name in out or name in ("diet", "coffee", "sport"):
            continue
        if re.search(spec.question, q, re.I):
            out.append(name)
    if re.search(r"\b(instrument)\b", q, re.I) and "instrument" not in out:
        out.insert(0, "instrument")
    if re.search(r"\b(mov(?:e|es|ing)|relocat\w*|settl\w*)\b", q, re.I):
        out = [o for o in out if o not in ("residence", "moving_to")]
        out[0:0] = ["moving_to", "residence"]
    elif re.search(r"\b(live|lives|(?<!for a )living|home|based)\b", q, re.I) and not re.search(r"\bfrom\b", q, re.I):
        out = [o for o in out if o not in ("residence", "moving_to")]
        out[0:0] = ["residence", "moving_to"]
    if re.search(r"\b(from|gr[eo]w(?:s|ing|n)? up|hometown|home town|born)\b", q, re.I) and re.search(r"\bwhere\b", q, re.I):
        out = [o for o in out if o != "hometown"]
        out.insert(0, "hometown")
    if re.search(r"\bwhere\b", q, re.I) and not any(o in ("residence", "moving_to", "hometown", "trip_destination", "employer") or o.startswith("venue:") for o in out):
        out.append("residence")
    if re.search(r"\b(who|which company|what company)\b.*\b(work|job)", q, re.I) and "employer" not in out:
        out.insert(0, "employer")
    return list(dict.fromkeys(out))


__all__ = [
    "CAP", "PHRASE", "NAME", "FIRST", "AUX", "MODAL", "SPECIES", "DIETS", "COFFEES", "SPORTS", "EVENT_NOUNS",
    "INSTRUMENTS", "RELATIVES", "family_facet", "FACETS", "FacetSpec", "REVISION_CUES", "STRONG_CUES", "COUNTERFACTUAL", "NEGATION",
    "pet_facet", "date_facet", "venue_facet", "favourite_facet", "facet_kind", "facet_label",
    "normalise_value", "question_facets",
]
