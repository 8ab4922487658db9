"""Request validation, one way: pure checks every server runs before a handler.

:func:`check_request` (in :mod:`drover.validation.fields`) is called by the
server bootstrap's error interceptor for every request of every service, so
no handler ever sees an undefined enum number, an out-of-range duration, an
oversized string or a malformed id. Handlers still check what only they
know (required fields, "exactly one of", cross-field rules).
"""

from drover.validation.fields import check_request
from drover.validation.limits import DEFAULT_LIMITS, Limits, is_id_field

__all__ = ["DEFAULT_LIMITS", "Limits", "check_request", "is_id_field"]
