"""The ACL family: the AclService every state replica hosts.

Its RPCs (Bootstrap, ApplyPolicy, ListPolicies, DeletePolicy, CreateToken,
ListTokens, RevokeToken, GetSelfToken) arrive through
:class:`drover.state.servicer.AclServicer` and are served by
:class:`.admin.AclAdmin`, planned by :mod:`.core.acl` and committed through
the write pipeline's :func:`drover.state.pipeline.transact_on` on views
read from etcd (the state cache does not hold the ACL keyspace).
"""
