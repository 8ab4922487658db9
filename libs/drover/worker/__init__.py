"""drover's reference scheduler worker: dequeue, plan, submit, ack.

A client of the broker and state services like a worker written in any
other language would be. :mod:`.planner` is the pure placement core (no
asyncio, no gRPC): it turns a :mod:`.plan` snapshot into a plan, built
through :mod:`.builder`, with the generic (service, batch) and system
schedulers in :mod:`.generic` and :mod:`.system`; :mod:`.loop` is the thin
async shell around it.
"""
