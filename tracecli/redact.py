"""Keep secrets out of what tracecli prints: API keys and credentials in anything that looks like a URL."""

from __future__ import annotations

import os
import re

#: Environment variables that hold secrets (tracecli's and the OpenAI client's conventional one).
SECRET_ENV = ("TRACECLI_LLM_API_KEY", "OPENAI_API_KEY", "TRACECLI_EMBED_API_KEY")

# user:password before a host, parsed or not: "https://u:k@h", "https//u:k@h", "u:k@h/v1" (a plain
# "alice@example.com" has no password and stays)
_USERINFO = re.compile(r"(?<![\w.%+~-])[\w.%+~-]*:[^\s/@]*@(?=[\w.-]+(?::\d+)?(?:[/\s?#]|$))")
# a query string or fragment of a URL (keys travel as ?api_key=…)
_QUERY = re.compile(r"(?<=[\w/.-])([?#])[^\s\"'<>]*")
# Authorization header values
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")


def redact(text: str) -> str:
    """`text` with every configured API key, URL user info, URL query string and bearer token replaced by ***."""
    for var in SECRET_ENV:
        secret = os.environ.get(var)
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    text = _USERINFO.sub("***@", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} ***", text)
    return text


def redact_url(url: str | None) -> str | None:
    """A URL to show: scheme, host, port and path; user info and query dropped, parsed or not."""
    if not url:
        return url
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
    except ValueError:
        return redact(_QUERY.sub("", url))
    if not parts.scheme or not parts.netloc:
        # not a URL urlsplit understands ("https//u:k@h/v1"): drop anything before an @ as well
        return redact(_QUERY.sub("", url.rpartition("@")[2] if "@" in url else url))
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


__all__ = ["SECRET_ENV", "redact", "redact_url"]
