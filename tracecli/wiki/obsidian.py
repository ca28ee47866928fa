"""Obsidian-ready markdown for `tracecli wiki export`: pages and claims as a linked vault.

Every page becomes `<slug>.md` and every claim `claims/<claim id>.md` inside the
conversation's folder, each with YAML front matter. Links are wiki links:
`[Alice](alice.md)` in a page becomes `[[alice|Alice]]`, a cited claim id
becomes `[[cl_…]]`, and a claim note links back to its person's page and to
every page that cites it, so people, topics and claims form one graph. A
claim note holds its supporting quote as a block quote with the message it
comes from (source ref, message id, date), and its predecessor / successor in
the ADD → REVISE → DEPRECATE log.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tracecli.store.db import Store, placeholders

_MD_LINK = re.compile(r"\[([^\]\n]+)\]\(([a-z0-9][a-z0-9-]*)\.md\)")
_CLAIM_ID = re.compile(r"(?<![\w\[/|])(cl_[0-9a-f]{10})\b(?!\]\])")


def _yaml_scalar(value: Any) -> str:
    """A YAML scalar: JSON's quoting is valid YAML and keeps any text safe."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)


def front_matter(fields: Mapping[str, Any]) -> str:
    """A YAML front-matter block (scalars and flat lists only)."""
    lines = ["---"]
    for key, value in fields.items():
        if isinstance(value, list | tuple):
            lines.append(f"{key}: [{', '.join(_yaml_scalar(v) for v in value)}]")
        else:
            lines.append(f"{key}: {_yaml_scalar(value)}")
    return "\n".join(lines + ["---", ""])


def wiki_links(markdown: str, known_claims: set[str]) -> str:
    """Markdown links between pages → `[[slug|Title]]`; bare claim ids of known claims → `[[cl_…]]`."""
    text = _MD_LINK.sub(lambda m: f"[[{m.group(2)}|{m.group(1)}]]", markdown)
    return _CLAIM_ID.sub(lambda m: f"[[{m.group(1)}]]" if m.group(1) in known_claims else m.group(1), text)


def _claim_rows(store: Store, cid: str) -> list[dict[str, Any]]:
    return store.query("SELECT * FROM claims WHERE conversation_id = ? ORDER BY idx", (cid,))


def vault_files(store: Store, pages: Sequence[Any]) -> dict[str, list[tuple[str, str]]]:
    """conversation id → [(path inside its folder, text)] for its pages and claims."""
    out: dict[str, list[tuple[str, str]]] = {}
    by_conv: dict[str, list[Any]] = {}
    for p in pages:
        by_conv.setdefault(p.conversation_id, []).append(p)
    for cid, conv_pages in by_conv.items():
        claims = _claim_rows(store, cid) if store.has_table("claims") else []
        ids = {c["id"] for c in claims}
        mids = {m for c in claims for m in json.loads(c["source_message_ids"])}
        anchors: dict[str, tuple[str | None, str | None]] = {}
        if mids:
            anchors = {r[0]: (r[1], r[2]) for r in store.execute(
                f"SELECT id, source_ref, timestamp FROM messages WHERE id IN ({placeholders(mids)})", tuple(mids))}
        person_page = {p.title: p for p in conv_pages if p.type == "entity" and ":" not in p.title}
        cited_by: dict[str, list[Any]] = {}
        files: list[tuple[str, str]] = []
        for p in conv_pages:
            for c in sorted(set(_CLAIM_ID.findall(p.markdown)) & ids):
                cited_by.setdefault(c, []).append(p)
            people = [t for t in person_page if t != p.title and re.search(rf"\b{re.escape(t)}\b", p.markdown)]
            fm = front_matter({
                "title": p.title, "type": p.type, "conversation": cid, "page_id": p.id, "origin": p.origin,
                "updated": p.updated_at, "trajectories": p.trajectories,
                "people": [f"[[{person_page[t].slug}|{t}]]" for t in people],
                "tags": ["tracecli", f"tracecli/{p.type}"],
            })
            files.append((f"{p.slug}.md", fm + wiki_links(p.markdown, ids)))
        for c in claims:
            files.append((f"claims/{c['id']}.md", _claim_note(c, anchors, person_page, cited_by.get(c["id"], []))))
        out[cid] = files
    return out


def _claim_note(c: Mapping[str, Any], anchors: Mapping[str, tuple[str | None, str | None]],
                person_page: Mapping[str, Any], pages: Sequence[Any]) -> str:
    mids = json.loads(c["source_message_ids"])
    refs = [anchors.get(m, (None, None))[0] or m for m in mids]
    date = next(((anchors[m][1] or "")[:10] for m in mids if m in anchors and anchors[m][1]), "")
    who = person_page.get(c["subject"])
    about = f"[[{who.slug}|{c['subject']}]]" if who is not None else (c["subject"] or "no participant")
    fm = front_matter({
        "id": c["id"], "status": c["status"], "subject": c["subject"], "facet": c["facet"], "item": c["item"],
        "family": c["family"], "trajectory": c["trajectory_id"], "date": date or None, "messages": mids,
        "source_refs": refs, "predecessor": c["predecessor_id"], "successor": c["successor_id"],
        "tags": ["tracecli", "tracecli/claim", f"status/{c['status']}"],
    })
    lines = [f"# {c['text']}", "", f"About {about} · status **{c['status']}**" + (f" · stated {date}" if date else ""), ""]
    lines += [f"> {' '.join(str(c['supporting_quote']).split())}",
              f"> — {', '.join(f'{r} ({m})' if r != m else m for r, m in zip(refs, mids))}" + (f", {date}" if date else ""), ""]
    if c["predecessor_id"]:
        lines.append(f"Replaces [[{c['predecessor_id']}]]")
    if c["successor_id"]:
        lines.append(f"Replaced by [[{c['successor_id']}]]")
    elif c["status"] == "deprecated":
        lines.append("Retracted: no longer holds")
    if pages:
        lines.append("Pages: " + ", ".join(f"[[{p.slug}|{p.title}]]" for p in pages))
    return fm + "\n".join(lines).rstrip() + "\n"
