"""Tables' memo of parsed object keys: every answer is KeyCodec.parse's,
and the memo never holds more than PARSED_KEYS keys however many distinct
keys are written (bounded memory)."""

from __future__ import annotations

from drover.api.types.v1 import evaluation_pb2
from drover.coord.keys import Keyspace
from drover.state.core import codec
from drover.state.core.tables import PARSED_KEYS, Tables

KEYS = codec.KeyCodec(Keyspace("/t/drover"))


def test_parses_are_the_codecs_and_the_memo_stays_bounded() -> None:
    tables = Tables(KEYS)
    value = evaluation_pb2.Evaluation(id="x", namespace="default", type="service")
    keys = [KEYS.key(codec.EVALUATIONS, "default", f"e{i}") for i in range(2 * PARSED_KEYS + 7)]
    others = [b"/t/drover/nope/default/x", b"/elsewhere/evaluations/default/x"]
    rev = 0
    for key in [*keys, *keys[:10], *others]:  # the first ones again, after a clear
        rev += 1
        got = tables.apply(key, value.SerializeToString(), rev, rev, False)
        want = KEYS.parse(key)
        assert (got[0] if got else None) == want
        assert tables._parse(key) == want
        assert len(tables._parsed) <= PARSED_KEYS
    assert len(tables[codec.EVALUATIONS]) == len(keys)
