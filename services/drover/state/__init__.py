"""The state service: drover's memory, and the only writer of objects.

Objects (jobs, job versions, evaluations, deployments, allocations, nodes,
scheduler config) live in etcd at ``<root>/v1/<kind>/<namespace>/<id>`` as
serialized protos; etcd's create/mod revisions are their create/modify
indexes. Every replica keeps a watch-fed cache (:mod:`.cache`) and serves
reads from it; writes are etcd transactions (:mod:`.writes`) compared on
mod_revision and, for leader writers, on the ``drover-fence``. Any number of
replicas serve at once: etcd orders the writes, and a consistent read waits
until the replica's cache has reached the current etcd revision.

Shape: :mod:`.app` wires the service (and builds its configs from
settings), :mod:`.servicer` hands each RPC to its group (:mod:`.queries`,
:mod:`.jobs`, :mod:`.evaluations`, ...), :mod:`.core` holds every pure part
(planners, rules, the codec, the cache tables), and the rest is the shell
(the cache, the writer, Subscribe's hub: the async and the I/O).

Entry point for the server bootstrap: :func:`drover.state.app.create_app`.
"""
