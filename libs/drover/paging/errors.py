"""Errors of the paging library.

Both are ``INVALID_ARGUMENT`` (drover.errors.InvalidArgument subclasses): the
client sent something the server cannot honour, and retrying the same request
cannot help. ``metadata['field']`` names the request field at fault, so a
client (or the CLI) can point at it.
"""

from __future__ import annotations

from drover.errors import InvalidArgument

__all__ = ["InvalidPageToken"]


class InvalidPageToken(InvalidArgument):
    """A page token that is malformed, altered, foreign or used out of context.

    Foreign: issued by another RPC method or by a cluster with another key.
    Out of context: issued for a request with a different filter, order,
    namespace, prefix, page size or scope. ``metadata['mismatch']`` lists the
    request fields that differ, when the token lets us tell.
    """

    reason = "INVALID_PAGE_TOKEN"
