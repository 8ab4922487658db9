"""CEL filters for List, Count and Delete RPCs, checked against a schema.

Pure library (no etcd, asyncio or gRPC). A service builds one
:class:`FilterCompiler` per listed kind from a :class:`Schema` (usually
``Schema.for_message(Evaluation.DESCRIPTOR)``; the broker adds its ``state``
field) and compiles each request's ``filter``::

    evals = FilterCompiler(Schema.for_message(Evaluation.DESCRIPTOR))
    flt = evals.compile('status == "pending" && priority > 50')
    flt.matches(evaluation)      # bool
    flt.constraints              # {"status": frozenset({"pending"})}: pick an index
    flt.exact                    # True if the filter is only such equalities

A :class:`Filter` satisfies :class:`drover.paging.Matcher`. Enums read as
lowercase short names (``"pending"``); use :meth:`Schema.getter` for index
extractors so that indexes and filters see the same values. Every mistake in
an expression raises :class:`InvalidFilter` (``INVALID_ARGUMENT``, reason
``INVALID_FILTER``).
"""

from drover.filter.compiler import CEL_RESERVED, Filter, FilterCompiler
from drover.filter.errors import InvalidFilter
from drover.filter.schema import Field, FieldKind, FieldType, Schema, enum_names, to_activation

__all__ = [
    "CEL_RESERVED",
    "Field",
    "FieldKind",
    "FieldType",
    "Filter",
    "FilterCompiler",
    "InvalidFilter",
    "Schema",
    "enum_names",
    "to_activation",
]
