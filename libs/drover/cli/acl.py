"""`drover acl ...`: bootstrap, policies and tokens (Nomad's commands).

A secret is printed only by the two commands that create one (bootstrap,
token create); listings and `token self` show accessor ids.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import grpc

from drover.api.acl.v1 import acl_pb2, acl_pb2_grpc
from drover.cli import output, prefix
from drover.cli.client import ClientOptions, CommandFailed, about, client_options, run, unary


def _stub(ch: grpc.aio.Channel) -> acl_pb2_grpc.AclServiceStub:
    return acl_pb2_grpc.AclServiceStub(ch)


def _type(value: int) -> str:
    return output.enum_name(value, acl_pb2.TokenType)


def _show_token(token: Any, secret: str = "") -> None:
    rows = [("Accessor ID", token.accessor_id)]
    if secret:
        rows.append(("Secret ID", secret))
    rows += [("Name", token.name), ("Type", _type(token.type)),
             ("Policies", ", ".join(token.policies) or "n/a"),
             ("Create Index", str(token.create_index))]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        click.echo(f"{k:<{width}}  {v}")


@click.group(name="acl")
def acl_group() -> None:
    """Access control: bootstrap, policies, tokens."""


@acl_group.command(name="bootstrap")
@client_options
def bootstrap(opts: ClientOptions) -> None:
    """Create the first management token (once per cluster) and print its secret."""

    resp = unary(opts, _stub, "Bootstrap", acl_pb2.BootstrapRequest())
    if opts.json:
        output.print_json({"accessor_id": resp.token.accessor_id, "secret_id": resp.secret_id})
    else:
        _show_token(resp.token, resp.secret_id)


@acl_group.group(name="policy")
def policy_group() -> None:
    """ACL policies (YAML or JSON rules)."""


@policy_group.command(name="apply")
@click.argument("name")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--description", default="", help="what the policy is for")
@client_options
def policy_apply(name: str, file: str, description: str, opts: ClientOptions) -> None:
    """Create or replace policy NAME from FILE ("-": stdin)."""
    try:
        rules = sys.stdin.read() if file == "-" else Path(file).read_text()
    except OSError as e:
        raise CommandFailed(f"cannot read {file}: {e.strerror}") from None

    resp = unary(opts, _stub, "ApplyPolicy", acl_pb2.ApplyPolicyRequest(
        name=name, description=description, rules=rules))
    for warning in resp.warnings:  # deprecated names: applied, but say what to write
        click.echo(f"warning: {warning}", err=True)
    if opts.json:
        output.print_json(resp.policy)
    else:
        click.echo(f"applied policy {resp.policy.name!r} (index {resp.policy.modify_index})")


@policy_group.command(name="list")
@client_options
def policy_list(opts: ClientOptions) -> None:
    """List policies."""
    policies = unary(opts, _stub, "ListPolicies", acl_pb2.ListPoliciesRequest()).policies
    output.print_list(opts, sorted(policies, key=lambda p: p.name),
                      ["Name", "Description", "Modify Index"],
                      lambda p: (p.name, p.description, p.modify_index))


@about(policy_group, "delete", "name", namespaced=False)
def policy_delete(name: str, opts: ClientOptions) -> None:
    """Delete policy NAME (tokens naming it lose what it granted)."""

    unary(opts, _stub, "DeletePolicy", acl_pb2.DeletePolicyRequest(name=name))
    output.print_json({"deleted": name}) if opts.json else click.echo(f"deleted policy {name!r}")


@acl_group.group(name="token")
def token_group() -> None:
    """ACL tokens."""


@token_group.command(name="create")
@click.option("--name", required=True, help="what the token is for")
@click.option("--policy", "policies", multiple=True, help="policy name (repeatable)")
@click.option("--type", "kind", type=click.Choice(["client", "management"]), default="client",
              show_default=True)
@client_options
def token_create(name: str, policies: tuple[str, ...], kind: str, opts: ClientOptions) -> None:
    """Create a token and print its secret (shown only now)."""
    type_ = (acl_pb2.TOKEN_TYPE_MANAGEMENT if kind == "management"
             else acl_pb2.TOKEN_TYPE_CLIENT)

    resp = unary(opts, _stub, "CreateToken", acl_pb2.CreateTokenRequest(
        name=name, type=type_, policies=list(policies)))
    if opts.json:
        output.print_json({**output.to_dict(resp.token), "secret_id": resp.secret_id})
    else:
        _show_token(resp.token, resp.secret_id)


@token_group.command(name="list")
@client_options
def token_list(opts: ClientOptions) -> None:
    """List tokens (accessor ids; secrets are never shown)."""
    tokens = unary(opts, _stub, "ListTokens", acl_pb2.ListTokensRequest()).tokens
    output.print_list(opts, sorted(tokens, key=lambda t: t.name),
                      ["Accessor ID", "Name", "Type", "Policies"],
                      lambda t: (t.accessor_id, t.name, _type(t.type), ",".join(t.policies)))


@about(token_group, "revoke", "accessor_id", namespaced=False)
def token_revoke(accessor_id: str, opts: ClientOptions) -> None:
    """Revoke the token with ACCESSOR_ID."""

    async def body(ch: grpc.aio.Channel) -> str:
        full = await prefix.token_accessor(ch, accessor_id, opts.timeout)
        await _stub(ch).RevokeToken(acl_pb2.RevokeTokenRequest(accessor_id=full),
                                    timeout=opts.timeout)
        return full

    full = run(opts, body)
    output.print_json({"revoked": full}) if opts.json else click.echo(f"revoked token {full}")


@token_group.command(name="self")
@client_options
def token_self(opts: ClientOptions) -> None:
    """Describe the token given with --token / DROVER_TOKEN."""

    resp = unary(opts, _stub, "GetSelfToken", acl_pb2.GetSelfTokenRequest())
    if opts.json:
        output.print_json(resp.token)
    else:
        _show_token(resp.token)
