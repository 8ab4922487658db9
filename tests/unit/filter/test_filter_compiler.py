import datetime

import pytest

from drover.api.types.v1 import allocation_pb2, deployment_pb2, evaluation_pb2, job_pb2, node_pb2
from drover.errors import InvalidArgument
from drover.filter import (
    Field,
    FieldKind,
    FieldType,
    FilterCompiler,
    InvalidFilter,
    Schema,
    enum_names,
    to_activation,
)

EVALS = FilterCompiler(Schema.for_message(evaluation_pb2.Evaluation.DESCRIPTOR))
EV = evaluation_pb2.Evaluation(
    id="e1", namespace="default", priority=60, type="service", job_id="web",
    status=evaluation_pb2.EVALUATION_STATUS_PENDING, create_index=7,
)  # fmt: skip


def test_enum_short_names():
    assert enum_names(evaluation_pb2.EvaluationStatus.DESCRIPTOR)[2] == "pending"
    assert enum_names(job_pb2.JobType.DESCRIPTOR)[1] == "service"
    assert enum_names(node_pb2.NodeSchedulingEligibility.DESCRIPTOR)[1] == "eligible"


def test_activation_of_each_kind():
    act = to_activation(EV)
    assert act["status"] == "pending" and act["priority"] == 60 and act["create_index"] == 7
    assert act["wait_until"] == datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    dep = deployment_pb2.Deployment(
        task_groups={"web": deployment_pb2.DeploymentGroupState(desired_total=3)}
    )
    assert to_activation(dep)["task_groups"]["web"]["desired_total"] == 3
    alloc = allocation_pb2.Allocation(client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING)
    assert to_activation(alloc)["client_status"] == "running"
    assert "healthy" not in to_activation(alloc)["deployment_status"]  # optional, unset
    job = job_pb2.Job(datacenters=["dc1"], meta={"team": "a"}, type=job_pb2.JOB_TYPE_BATCH)
    assert to_activation(job, ["datacenters", "meta", "type"]) == {
        "datacenters": ["dc1"], "meta": {"team": "a"}, "type": "batch"}  # fmt: skip


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('status == "pending" && priority > 50', True),
        ('status == "failed"', False),
        ('namespace == "default" && job_id.startsWith("we")', True),
        ('status in ["pending", "blocked"]', True),
        ("create_index >= 7u", True),
        ('wait_until < timestamp("2000-01-01T00:00:00Z")', True),
        ('type == "service" || priority < 0', True),
        ("", True),
    ],
)
def test_matches(expr, expected):
    assert EVALS.compile(expr).matches(EV) is expected


def test_deployment_map_and_missing_key():
    deps = FilterCompiler(Schema.for_message(deployment_pb2.Deployment.DESCRIPTOR))
    dep = deployment_pb2.Deployment(
        task_groups={"web": deployment_pb2.DeploymentGroupState(healthy_allocs=2)}
    )
    assert deps.compile("task_groups.web.healthy_allocs == 2").matches(dep)
    assert deps.compile('"web" in task_groups').matches(dep)
    assert not deps.compile("task_groups.api.healthy_allocs == 2").matches(dep)  # missing key


def _fails(expr: str) -> InvalidFilter:
    with pytest.raises(InvalidFilter) as err:
        EVALS.compile(expr)
    assert err.value.reason == "INVALID_FILTER"
    assert isinstance(err.value, InvalidArgument)
    assert err.value.metadata["field"] == "filter"
    return err.value


def test_unknown_field_is_named_with_the_valid_ones():
    err = _fails('status == "pending" && bogus_field > 1')
    assert err.metadata["path"] == "bogus_field"
    assert "unknown field 'bogus_field'" in err.message and "triggered_by" in err.message
    assert (err.metadata["line"], err.metadata["column"]) == ("1", "24")


def test_syntax_error_says_where():
    err = _fails('status == "pending" &&\n  priority >')
    assert (err.metadata["line"], err.metadata["column"]) == ("2", "13")
    assert "line 2, column 13" in err.message


@pytest.mark.parametrize(
    ("expr", "path"),
    [
        ('priority == "high"', "priority"),
        ("status == 3", "status"),
        ('status == "bogus"', "status"),
        ('status in ["pending", "nope"]', "status"),
        ('"high" == priority', "priority"),
        ('status > "pending"', "status"),
        ('wait_until > "2020"', "wait_until"),
        ("job_id == 1", "job_id"),
        ("job_id.name == 1", "job_id"),
        ("(priority != true)", "priority"),
    ],
)
def test_wrong_literal_types_are_refused(expr, path):
    assert _fails(expr).metadata["path"] == path


def test_non_bool_result_and_type_errors():
    assert "bool" in _fails("priority + 1").message
    assert "type error" in _fails('priority + "x" > 1').message


def test_shapes_the_static_check_must_not_flag():
    for expr in [
        'job_id + "x" == "webx"',
        "priority * 2 == 120",
        "[1, 2].exists(x, x == priority)",
        'size(job_id) > 2 && job_id.endsWith("b")',
        "priority == 60.0",
    ]:
        EVALS.compile(expr)


def test_namespace_reserved_word_is_usable_and_its_alias_is_not():
    flt = EVALS.compile('namespace == "default"')
    assert flt.matches(EV) and flt.fields == ("namespace",)
    assert dict(flt.constraints) == {"namespace": frozenset({"default"})}
    assert _fails('Namespace == "default"').metadata["path"] == "Namespace"


@pytest.mark.parametrize(
    ("expr", "constraints", "exact"),
    [
        ('status == "pending"', {"status": {"pending"}}, True),
        ('"pending" == status && (job_id == "web" && type in ["batch", "service"])',
         {"status": {"pending"}, "job_id": {"web"}, "type": {"batch", "service"}}, True),
        ('status == "pending" && priority > 5', {"status": {"pending"}}, False),
        ('status in ["pending", "failed"] && status == "failed"', {"status": {"failed"}}, True),
        ('status == "pending" || job_id == "web"', {}, False),
        ('status == "pending" && job_id == "a" ? true : false', {}, False),
        ('!(status == "pending")', {}, False),
        ("priority == -5", {"priority": {-5}}, True),
        ('(status == "pending" || priority == 1) && job_id == "x"', {"job_id": {"x"}}, False),
    ],
)  # fmt: skip
def test_constraints(expr, constraints, exact):
    flt = EVALS.compile(expr)
    assert {k: set(v) for k, v in flt.constraints.items()} == constraints
    assert flt.exact is exact


def test_cache_returns_the_same_compiled_filter_and_is_bounded():
    compiler = FilterCompiler(EVALS.schema, cache_size=2)
    first = compiler.compile("priority > 1")
    assert compiler.compile("priority > 1") is first
    compiler.compile("priority > 2")
    compiler.compile("priority > 3")
    assert len(compiler) == 2 and compiler.compile("priority > 1") is not first


def test_extra_field_for_the_broker():
    states = FieldType.enum(["ready", "unacked"])
    schema = Schema.for_message(
        evaluation_pb2.Evaluation.DESCRIPTOR,
        via=lambda item: item[0],
        extra=[Field("state", states, lambda item: item[1])],
    )
    flt = FilterCompiler(schema).compile('state == "ready" && priority == 60')
    assert flt.matches((EV, "ready")) and not flt.matches((EV, "unacked"))
    with pytest.raises(InvalidFilter):
        FilterCompiler(schema).compile('state == "gone"')
    assert schema.field("state").type.kind is FieldKind.ENUM


@pytest.mark.parametrize("expression", [
    "1/0 == 1", 'job_id.matches("(")', 'job_id.matches("(") || priority > 200',
    "priority % 0 == 1",
])
def test_filters_that_fail_whatever_the_object_are_refused(expression):
    with pytest.raises(InvalidFilter) as info:
        EVALS.compile(expression)
    assert "cannot be evaluated" in info.value.message
    assert info.value.metadata["field"] == "filter"


@pytest.mark.parametrize("expression", [
    "1000 / priority > 1",  # fails only where priority is 0: data decides
    'job_id.matches("^w")',
])
def test_data_dependent_failures_still_compile(expression):
    flt = EVALS.compile(expression)
    zero = evaluation_pb2.Evaluation(id="z")
    assert flt.matches(zero) is False
    assert flt.matches(EV) is True


def test_long_filters_are_not_echoed_whole():
    with pytest.raises(InvalidFilter) as info:
        EVALS.compile("priority == 1 && " + "x" * 3000 + " ==")
    assert len(info.value.message) < 600
