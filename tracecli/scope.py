"""Namespaces: which conversations a command may read, decided in one place.

Every conversation belongs to one namespace (a user or an agent; `default`
unless ingest said otherwise). A command works inside one namespace and never
reads across: `resolve_scope` turns (namespace, --conversation) into the
conversation ids every stage then filters on, and `llm_scope` tells a chat
model whose text its prompts carry, so the LLM cache never serves a reply
across namespaces.

Library callers may pass `namespace=None`: with a conversation id that means
the conversation's own namespace, without one the `default` namespace. The
CLI always passes a namespace (`--namespace`, else TRACECLI_NAMESPACE, else
`default`), so there a conversation of another namespace is an error.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracecli.errors import BadInput, NotFound
from tracecli.store.db import Store, execute_in
from tracecli.text import strip_controls

if TYPE_CHECKING:
    from tracecli.providers.llm import ChatModel

DEFAULT_NAMESPACE = "default"
NAMESPACE_ENV = "TRACECLI_NAMESPACE"


@dataclass(frozen=True)
class Scope:
    """A namespace and the conversations of it that a command works on (sorted ids)."""

    namespace: str
    conversation_ids: tuple[str, ...]


def check_namespace(namespace: str | None, where: str = "--namespace") -> str:
    """The namespace to use, normalised (`default` for None): the one place a namespace name is cleaned.

    Surrounding spaces go and the name is NFC-normalised, so what ingest stores is what reading
    commands look up. BadInput (naming `where`) for a blank name or one with control characters.
    """
    if namespace is None:
        return DEFAULT_NAMESPACE
    name = unicodedata.normalize("NFC", namespace).strip()
    if not name:
        raise BadInput(f"{where} is empty; give a name such as 'alice' (or leave it out for 'default')")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise BadInput(f"{where} {strip_controls(name)!r} holds a control or unassigned character; give a printable name")
    return name


def namespace_of(store: Store, conversation_id: str) -> str | None:
    """The namespace of a conversation, None when there is no such conversation."""
    row = store.execute("SELECT namespace FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
    return None if row is None else str(row[0])


def namespaces(store: Store) -> list[str]:
    """Every namespace that holds a conversation, sorted."""
    return [r[0] for r in store.execute("SELECT DISTINCT namespace FROM conversations ORDER BY namespace")]


def bind_namespaces(store: Store, names: Iterable[str]) -> None:
    """Tell the store the namespace the rows about to be written belong to, when they are of one
    (row-level security on PostgreSQL; several: only a role the policies do not hold may write them)."""
    distinct = set(names)
    if len(distinct) == 1:
        store.bind_namespace(distinct.pop())


def resolve_scope(store: Store, namespace: str | None = None, conversation_id: str | None = None) -> Scope:
    """The conversations a command may read: one conversation of the namespace, or all of it.

    The store is bound to the namespace first (on PostgreSQL the server then holds every later query
    to it). NotFound (exit 2) for an unknown conversation, a conversation of another namespace, or a
    namespace with no conversations (naming the ones that exist).
    """
    if namespace is not None or not conversation_id:
        store.bind_namespace(check_namespace(namespace))
    if conversation_id:
        owner = namespace_of(store, conversation_id)
        if owner is None:
            raise NotFound(f"no conversation '{conversation_id}' in {store.path.name}; run `tracecli ingest` first")
        ns = owner if namespace is None else check_namespace(namespace)
        if owner != ns:
            raise NotFound(f"conversation '{conversation_id}' is in namespace '{owner}', not '{ns}'; "
                           f"pass --namespace {owner}")
        return Scope(ns, (conversation_id,))
    ns = check_namespace(namespace)
    ids = tuple(r[0] for r in store.execute("SELECT id FROM conversations WHERE namespace = ? ORDER BY id", (ns,)))
    if ids:
        return Scope(ns, ids)
    known = namespaces(store)
    if not known:
        raise NotFound(f"{store.path.name} holds no conversations; run `tracecli ingest FILE` first")
    raise NotFound(f"namespace '{ns}' has no conversations in {store.path.name} (namespaces: {', '.join(known)}); "
                   f"pass --namespace NAME or set {NAMESPACE_ENV}")


def qualified_ref(conversation_id: str, ref: str) -> str:
    """A ref that stays unambiguous when several conversations are in scope ('conv:s2-m16')."""
    return f"{conversation_id}:{ref}"


def message_refs(store: Store, conversation_id: str, message_ids: Sequence[str] | None = None) -> set[str]:
    """Every way an answer can cite the conversation's messages (or only these): id and source ref, plain and
    qualified (an answer asked over several conversations qualifies its refs)."""
    if message_ids is None:
        rows = store.execute("SELECT id, source_ref FROM messages WHERE conversation_id = ?", (conversation_id,)).fetchall()
    else:
        rows = execute_in(store, "SELECT id, source_ref FROM messages WHERE id IN ({marks})", message_ids)
    refs: set[str] = set()
    for mid, ref in rows:
        for r in (mid, ref):
            if r:
                refs.update((r, qualified_ref(conversation_id, r)))
    return refs


def scope_of(store: Store, conversation_ids: Iterable[str]) -> Scope:
    """The scope of text drawn from these conversations (for the LLM cache).

    Conversations of several namespaces get a combined name ('alice+bob'), so
    such a prompt's cached reply matches no single namespace's.
    """
    ids = tuple(sorted(set(conversation_ids)))
    owners = sorted({namespace_of(store, c) or DEFAULT_NAMESPACE for c in ids}) or [DEFAULT_NAMESPACE]
    return Scope("+".join(owners), ids)


@contextmanager
def llm_scope(model: ChatModel | None, scope: Scope | None) -> Iterator[None]:
    """Within the block, `model` caches and looks up replies under `scope` (restored afterwards).

    Chat models that cache (`OpenAIChatModel`) read their `scope` attribute when
    a request is prepared; other models ignore it.
    """
    previous = getattr(model, "scope", None)
    try:
        if model is not None:
            model.scope = scope
        settable = model is not None
    except AttributeError:  # a model object that cannot carry one keeps no cache either
        settable = False
    try:
        yield
    finally:
        if settable and model is not None:
            model.scope = previous


__all__ = ["DEFAULT_NAMESPACE", "NAMESPACE_ENV", "Scope", "bind_namespaces", "check_namespace", "llm_scope", "message_refs", "namespace_of",
           "namespaces", "qualified_ref", "resolve_scope", "scope_of"]
