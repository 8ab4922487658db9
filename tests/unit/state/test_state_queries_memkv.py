"""The read RPC cases (``tests/state_query_cases.py``) on a state service over
:class:`MemoryKV`: the same bodies as the etcd run, no etcd (``replica`` is
the in-memory one of ``tests/unit/state/conftest.py``)."""

from __future__ import annotations

from state_query_cases import (  # noqa: F401  (pytest collects imported tests)
    test_a_bad_count_scope_is_refused,
    test_a_bad_filter_is_refused,
    test_a_bad_namespace_is_refused,
    test_a_bad_or_missing_id_is_refused,
    test_count_by_namespace_filter_and_job,
    test_every_read_blocks_until_its_kind_changes,
    test_get_evaluation_searches_every_namespace_and_walks_the_chain,
    test_get_finds_what_was_written,
    test_get_of_a_missing_object_is_not_found,
    test_job_versions_newest_first_and_a_version_by_number,
    test_list_pages_through_what_was_written,
    test_not_found_cases_cover_every_get_that_can_miss,
    test_scheduler_config_has_defaults_then_what_was_set,
)
