"""The state service: drover's memory, and the only writer of objects.

Objects (jobs, job versions, evaluations, deployments, allocations, nodes,
scheduler config) live in etcd at ``<root>/v1/<kind>/<namespace>/<id>`` as
serialized protos; etcd's create/mod revisions are their create/modify
indexes. Every replica keeps a watch-fed cache (:mod:`.cache`) and serves
reads from it; writes are etcd transactions (:mod:`.store`) compared on
mod_revision and, for leader writers, on the ``drover-fence``. Any number of
replicas serve at once: etcd orders the writes, and a consistent read waits
until the replica's cache has reached the current etcd revision.

Entry point for the server bootstrap: :func:`drover.state.app.create_app`.
"""
